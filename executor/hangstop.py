"""Ending a hung run early for verify (RunRequest.stop_when_stuck): seconds, not the limit.

A run is stopped as a time-out before its limit only on evidence that it can never move again:

- every rank still running has started (a rank still being started may be the peer the others
  wait for), and no rank has failed (that run is being stopped as torchrun stops it);
- over a window of WINDOW_S, each live rank's main thread (the one running the snippet) never
  got a CPU and is still asleep at the end, none of its threads waited for a CPU the whole
  window (a starved thread may hold the event that would wake it), its threads used next to no
  CPU, and neither it nor init has a process it did not start (a child that could act later);
- then, dumped at once, each live rank's stack shows one Python thread, in a call that waits for
  another rank (stacks.waits_for_peer: the notion the time-out's report uses);
- and all of that twice in a row, the ranks at the same lines and calls both times.

A rank blocked so, whose peers are all blocked so, waits for a message nobody will send: only a
timer could end the wait first. The executor cannot see timers set inside a blocked process
(gloo's wait runs in C; running Python there, or wrapping torch's API, would change what the
snippet sees), so it declines to look (`refusal`) at a snippet whose words can set one: a
process group's or store's timeout (`timeout=`, a `timedelta`, `set_timeout`), a signal or alarm
(`signal.alarm`, `setitimer`, `faulthandler.dump_traceback_later`, a handler of its own for the
dump's signal), or code and names built at run time, which could hide either: exec, eval,
getattr, and every other way to reach a module's or an object's names by a string (`vars`,
`__dict__`, `globals`, `operator.attrgetter`, `inspect`, `pickle`, `ctypes`...), each word
compared as Python reads names, in their NFKC form (`ｔｉｍｅｏｕｔ=` is `timeout=`). Words alone
miss a timeout that needs no word: torch's bindings take a number of seconds by position
(`work.wait(2.0)`, `TCPStore(host, port, n, master, 2.0)`), and an alias or `**options` hides
the call. So a call that can take a deadline (TIMEOUT_CARRIERS) is looked at only when called
by its own name with its timeout's place left empty, and with no `*`/`**` arguments; named any
other way (`f = dist.new_group`, `partial(...)`, `import ... as`) it declines too. torch's own
defaults (30 min for a gloo group, 5 min for a store) are far beyond the executor's longest
limit. Such a snippet, a `python` launch (its ranks are its children) and a
run on NCCL (its collectives return at once; its watchdog can end a rank) run to their limit
as before. Learners' runs never ask for any of this.

Init measures (it sees the ranks' pids and /proc in the run's pid namespace, and keeps reaping
during the window); the slot asks for each look, reads the dumps and decides.
"""

from __future__ import annotations

import ast
import io
import os
import threading
import tokenize
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from executor import stacks
from executor.contract import StuckAt

WINDOW_S = 0.5  # one look at the ranks' threads
LOOKS = 2  # consecutive looks that must agree before the run is stopped
FIRST_LOOK_S = 0.3  # after the request: ranks usually reach their first collective by then
# The threads of a blocked rank may still use a little CPU: gloo's event loop wakes every 10 ms
# (about 1.5 ms of CPU a second, measured on 2 loaded cores).
IDLE_SHARE = 0.02
ANSWER_WAIT_S = 1.0  # how long past the window the slot waits for init's answer
# Lower-cased substrings of a snippet's names and strings that make the executor decline.
REFUSING_WORDS = (
    "timeout", "timedelta",  # a group's, a store's or a wait's deadline
    "signal", "alarm", "itimer", "faulthandler",  # timers and signal handlers
    "exec", "eval", "compile", "__import__", "importlib", "getattr", "setattr",  # hidden names
    "vars", "__dict__", "globals", "locals", "__getattribute__", "attrgetter", "methodcaller",
    "operator", "inspect", "pickle", "marshal", "ctypes", "builtins", "formatter",  # by string
    "defaults",  # __defaults__, __kwdefaults__: a default timeout rewritten
)  # fmt: skip
# Calls that take a deadline, each with the position its timeout has among the arguments
# (0: any positional argument may be one, as Work.wait's and Event.wait's first).
TIMEOUT_CARRIERS = {
    "init_process_group": 2, "new_group": 1, "new_subgroups": 2,
    "new_subgroups_by_enumeration": 1, "monitored_barrier": 1, "wait": 0, "TCPStore": 4,
    "ProcessGroupGloo": 3,
}  # fmt: skip


# Tokens whose text may hold a word: names, strings and (Python 3.12 on) f-strings' text.
_WORDY = {tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}


def refusal(request: Mapping[str, Any], backend: str) -> str | None:
    """Why the executor will not stop this run early (None: it will look)."""
    if not request.get("stop_when_stuck"):
        return "not asked"
    if request.get("launcher", "torchrun") != "torchrun":
        return "a python launch: its ranks are its own children"
    if backend != "gloo":
        return f"backend {backend}: only gloo's blocking waits are read"
    word = refusing_word(str(request.get("code", "")))
    return f"the snippet says {word!r}: it may end a wait by itself" if word else None


# Python 3.11 keeps the AST constructor's recursion depth in state shared by every thread, and
# verify checks its proofs on a pool of threads: two ast.parse calls at once failed one with
# "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905). One at a time.
_PARSING = threading.Lock()


def refusing_word(code: str) -> str | None:
    """What in the snippet makes the executor decline to look: the first REFUSING_WORDS found
    in its names and strings (comments aside), or a call that may carry a deadline unseen."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
        with _PARSING:
            tree = ast.parse(code)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return "an untokenizable snippet"
    return _word_in(tokens) or _hidden_deadline(tree)


def _word_in(tokens: list[tokenize.TokenInfo]) -> str | None:
    for token in tokens:
        if token.type not in _WORDY:
            continue
        # Python reads a name as its NFKC form (`ｔｉｍｅｏｕｔ=` and `𝐭𝐢𝐦𝐞𝐨𝐮𝐭=` are `timeout=`);
        # tokenize gives the text as written. Strings are read the same way: a string's word
        # spelled so is still a word meant (the snippet may normalise it at run time).
        text = unicodedata.normalize("NFKC", token.string).lower()
        for word in REFUSING_WORDS:
            if word in text:
                return word
    return None


def _called_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _hidden_deadline(tree: ast.AST) -> str | None:
    """A call of TIMEOUT_CARRIERS whose deadline the words cannot see (None: there is none)."""
    called = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called.add(id(node.func))
        name = _called_name(node.func)
        if name not in TIMEOUT_CARRIERS:
            continue
        unpacked = any(isinstance(argument, ast.Starred) for argument in node.args)
        if unpacked or any(keyword.arg is None for keyword in node.keywords):
            return f"{name}(*/**)"  # arguments unpacked: a timeout may be among them
        # The parser gives names in their NFKC form, however the snippet spelled them: this
        # holds even where the words above were spelled past their filter.
        if any(keyword.arg == "timeout" for keyword in node.keywords):
            return f"{name}(timeout=…)"
        if len(node.args) > TIMEOUT_CARRIERS[name]:
            return f"{name}(…) with its timeout's place filled"
    for node in ast.walk(tree):
        name = _called_name(node)
        if name in TIMEOUT_CARRIERS and id(node) not in called:
            return f"{name} (not called by its name)"  # an alias could pass a timeout
        if (
            isinstance(node, ast.alias)
            and node.asname
            and node.name.rsplit(".", 1)[-1] in TIMEOUT_CARRIERS
        ):
            return f"{node.name} as {node.asname}"
    return None


@dataclass(frozen=True)
class ThreadSample:
    cpu_ns: int  # time on a CPU so far (schedstat)
    runs: int  # times it was put on a CPU so far (schedstat)
    state: str  # R running or runnable, S or D asleep, Z, T, ...


def threads_of(pid: int) -> dict[int, ThreadSample] | None:
    """Each thread of a process, sampled from /proc; None when that cannot be read whole."""
    found: dict[int, ThreadSample] = {}
    try:
        for name in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{name}/schedstat", "rb") as schedstat:
                cpu, _, runs = schedstat.read().split()[:3]
            with open(f"/proc/{pid}/task/{name}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0].decode()
            found[int(name)] = ThreadSample(int(cpu), int(runs), state)
    except (OSError, IndexError, ValueError):
        return None
    return found


def children_of(parents: set[int]) -> dict[int, set[int]]:
    """The live children of each of these processes, from one pass over /proc (the run's own
    pid namespace when sandboxed; /proc/PID/task/TID/children is not in every kernel)."""
    found: dict[int, set[int]] = {parent: set() for parent in parents}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        parent = int(fields[1])
        if parent in found and fields[0] != b"Z":
            found[parent].add(int(name))
    return found


def stirred(
    pid: int,
    before: dict[int, ThreadSample] | None,
    after: dict[int, ThreadSample] | None,
    window_ns: int,
) -> str | None:
    """How a rank showed it was not blocked throughout the window (None: it was)."""
    if before is None or after is None:
        return "its threads could not be read (it may have ended)"
    if set(before) != set(after):
        return "a thread started or ended"
    first, last = before.get(pid), after.get(pid)
    if first is None or last is None:
        return "no main thread"
    if last.runs != first.runs or last.state not in ("S", "D"):
        return "its main thread ran or wants to run"
    for tid, sample in after.items():
        if sample.state == "R" and sample.runs == before[tid].runs:
            return f"thread {tid} waited for a CPU the whole window"
    used = sum(after[tid].cpu_ns - before[tid].cpu_ns for tid in after)
    if used > IDLE_SHARE * window_ns:
        return f"it used {used // 1_000_000} ms of CPU"
    return None


class Look:
    """Init's side: the ranks' threads sampled at the start of a window, judged at its end."""

    def __init__(self, running: Mapping[int, int], now: float) -> None:
        self.due = now + WINDOW_S
        self.ranks = dict(running)  # pid -> rank
        self.before = {pid: threads_of(pid) for pid in running}

    def finish(self, running: Mapping[int, int], waiting: int, own: set[int]) -> dict[str, Any]:
        """The answer for the slot: {"idle": bool, "why": ..., "cpu": {rank: ms}, "window_ms"}.

        `running`: the ranks' pids now; `waiting`: how many ranks have not ended; `own`: the
        processes init started (its ranks, the store's)."""
        window_ns = int(WINDOW_S * 1e9)
        answer: dict[str, Any] = {"idle": False, "cpu": {}, "window_ms": int(WINDOW_S * 1000)}
        why = None
        if len(running) < waiting:
            why = "a rank has not started yet"
        elif dict(running) != self.ranks:
            why = "a rank started or ended during the window"
        for pid, rank in running.items():
            after = threads_of(pid)
            before = self.before.get(pid)
            if before is not None and after is not None and set(before) <= set(after):
                used = sum(after[tid].cpu_ns - before[tid].cpu_ns for tid in before)
                answer["cpu"][str(rank)] = max(0, used) // 1_000_000
            reason = stirred(pid, before, after, window_ns)
            if why is None and reason is not None:
                why = f"rank {rank}: {reason}"
        if why is None:
            why = _strays(running, own)
        answer["why"] = why
        answer["idle"] = why is None
        return answer


def _strays(running: Mapping[int, int], own: set[int]) -> str | None:
    """A process that could act later: a rank's child, or one init did not start (an orphan
    of a rank's, which comes to init as the pid namespace's reaper)."""
    children = children_of({os.getpid(), *running})
    for pid, rank in running.items():
        if children[pid]:
            return f"rank {rank} has a process of its own"
    if not children[os.getpid()] <= own:
        return "a process the run did not start is running"
    return None


class Watch:
    """The slot's side: when to ask init for a look, and whether the looks prove a hang."""

    def __init__(self, started: float) -> None:
        self.asked_at: float | None = None  # a look is under way
        self.answer: dict[str, Any] | None = None  # init's answer to it, once read
        self.answered_at = 0.0
        self.next_at = started + FIRST_LOOK_S
        self.agreeing = 0  # consecutive looks that found every rank stuck
        self.last: dict[int, tuple[int | None, str | None]] = {}

    def ask_now(self, now: float) -> bool:
        return self.asked_at is None and now >= self.next_at

    def asked(self, now: float) -> None:
        self.asked_at, self.answer = now, None

    def wake_at(self, now: float) -> float:
        """When the slot must next act for the watch."""
        if self.asked_at is None:
            return self.next_at
        if self.answer is not None:
            return now + stacks.DUMP_QUIET_S  # reading the dumps: has each come whole?
        return self.asked_at + WINDOW_S + ANSWER_WAIT_S

    def overdue(self, now: float) -> bool:
        """Init has not answered in time (busy, or the look was lost): ask again."""
        return self.asked_at is not None and now >= self.asked_at + WINDOW_S + ANSWER_WAIT_S

    def settle(
        self, stuck: Mapping[int, StuckAt] | None, threads: Mapping[int, int], now: float
    ) -> bool:
        """Take the outcome of a look (`stuck`: each live rank's place, None when the look
        found them stirring); True once LOOKS looks in a row found every rank stuck at the
        same places."""
        self.asked_at, self.answer, self.next_at = None, None, now
        stuck = stuck or {}
        places = {rank: (at.line, at.call) for rank, at in stuck.items()}
        proven = (
            bool(stuck)
            and all(stacks.waits_for_peer(at) for at in stuck.values())
            and all(threads.get(rank) == 1 for rank in places)  # one Python thread: no timer
        )
        if not proven:
            self.agreeing, self.last = 0, {}
            return False
        self.agreeing = self.agreeing + 1 if places == self.last else 1
        self.last = places
        return self.agreeing >= LOOKS

"""Where a hung rank is stuck: its Python stack, dumped just before the time limit's kill.

Each rank registers faulthandler on DUMP_SIGNAL, writing every Python thread's stack to its own
pipe (STACK_FD). At the deadline the run's init samples each live rank's CPU time, signals it,
and the slot reads the dumps for a bounded moment before killing the run as always. The dump is
written by a process that runs the snippet, which may replace the handler, close the fd, or
write anything there: it is capped, parsed line by line as data, and only ever adds detail
(StuckAt); a rank's status still comes from its wait status.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import signal
from dataclasses import dataclass

from executor.contract import StuckAt

# Default action "ignore": a snippet that resets the handler is not killed by the dump request
# (its wait status stays the deadline's), and a rank that never registered one is untouched.
DUMP_SIGNAL = signal.SIGWINCH
STACK_FD = 4  # after the record's fd 3
# What the slot keeps of one rank's dump: faulthandler writes at most 100 frames per thread and
# ~200 bytes a frame, so an honest dump of a few threads fits; the rest is drained and dropped.
DUMP_LIMIT_BYTES = 64 * 1024
SAMPLE_S = 0.2  # CPU time is sampled over this long, before the signal
DUMP_WAIT_S = 0.25  # how long the slot waits for the dumps after the sample
DUMP_QUIET_S = 0.03  # a dump is taken as complete after this long without more bytes
CALL_CHARS = 80

_FRAME = re.compile(
    r'^  File "(?P<path>[^"\n]{1,4096})", line (?P<line>\d{1,9}) in (?P<name>\S{1,200})$'
)
_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):$")
# Frames of decorators and wrappers: the call a learner wrote is the next public frame inward.
_WRAPPERS = {"wrapper", "inner", "wrapped", "decorated", "decorate_context", "fn", "func"}
# The torch.distributed calls that wait for other ranks (by function name, as the stack names
# them); `wait` is a pending request's (isend/irecv/async_op).
WAITING_CALLS = frozenset(
    {
        "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
        "all_gather_object", "gather", "gather_object", "scatter", "scatter_object_list",
        "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
        "broadcast_object_list", "barrier", "monitored_barrier", "send", "recv", "send_object_list",
        "recv_object_list", "batch_isend_irecv", "wait", "init_process_group", "new_group",
    }
)  # fmt: skip

# DistributedDataParallel.forward (torch/nn/parallel/distributed.py) as the stack names it when
# the snippet calls the model: its collectives run from C++ too (the second iteration's forward
# rebuilds the gradient buckets, broadcasting their order from rank 0; buffers are broadcast).
# A rank there with an uneven batch count waits for a peer that never comes; one whose module
# works inside it uses CPU, and one asleep in the snippet's own forward is stuck on that line.
DDP_FORWARD = "distributed.forward"


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    name: str


def threads(dump: bytes) -> list[list[Frame]]:
    """Each thread's frames, most recent first, from faulthandler's text (junk lines skipped)."""
    found: list[list[Frame]] = []
    current: list[Frame] | None = None
    for raw in dump[:DUMP_LIMIT_BYTES].decode("utf-8", "replace").splitlines():
        if _THREAD.match(raw):
            current = []
            found.append(current)
            continue
        match = _FRAME.match(raw)
        if match and current is not None:
            current.append(Frame(match["path"], int(match["line"]), match["name"]))
    return found


def stuck_at(
    dump: bytes, code: str, snippet_name: str, cpu_ms: int | None, sample_ms: int | None
) -> StuckAt:
    """Where the rank's main thread was in the snippet, and the call it waited in."""
    line = call = None
    distributed = False
    chosen = _main_thread(threads(dump), snippet_name)
    if chosen is not None:
        index = next(i for i, f in enumerate(chosen) if _in_snippet(f, snippet_name))
        count = code.count("\n") + 1
        frame_line = chosen[index].line
        line = frame_line if 1 <= frame_line <= count else None
        callee = _public_callee(chosen[:index])
        written = None
        if line is not None:
            written = _written_call(code, line, callee.name if callee is not None else None)
        if callee is not None:
            distributed = "/torch/distributed/" in callee.path
            label = "dist" if distributed else _module_label(callee.path)
            call = f"{label}.{callee.name}"
            if written is not None and written.rsplit(".", 1)[-1] == callee.name:
                call = written  # as the learner wrote it: `loss.backward`, `dist.all_reduce`
        else:
            call = written  # waiting in C (time.sleep, queue's lock): the line says which
    return StuckAt(
        line=line,
        call=call[:CALL_CHARS] if call else None,
        distributed=distributed,
        cpu_ms=cpu_ms,
        sample_ms=sample_ms,
    )


def waits_for_peer(stuck: StuckAt | None) -> bool:
    """Whether the call a rank's stack shows it in is one that waits for another rank: a
    torch.distributed collective, point-to-point transfer, barrier or rendezvous, or a DDP
    backward (which all-reduces the gradients from C++, with no torch.distributed frame) or
    forward (DDP_FORWARD)."""
    if stuck is None or stuck.call is None:
        return False
    name = stuck.call.rsplit(".", 1)[-1]
    distributed_wait = stuck.distributed and name in WAITING_CALLS
    return distributed_wait or name == "backward" or stuck.call == DDP_FORWARD


def _in_snippet(frame: Frame, snippet_name: str) -> bool:
    return os.path.basename(frame.path) == snippet_name


def _main_thread(found: list[list[Frame]], snippet_name: str) -> list[Frame] | None:
    # The thread running rank.py's _execute runs the snippet's __main__; a thread of the
    # snippet's own comes second.
    with_snippet = [t for t in found if any(_in_snippet(f, snippet_name) for f in t)]
    for thread in with_snippet:
        if any(f.name == "_execute" and os.path.basename(f.path) == "rank.py" for f in thread):
            return thread
    return with_snippet[0] if with_snippet else None


def _public_callee(below: list[Frame]) -> Frame | None:
    """The outermost frame under the snippet's that is not a wrapper or a private helper."""
    for frame in reversed(below):  # from the snippet's callee inward
        if not frame.name.startswith(("_", "<")) and frame.name not in _WRAPPERS:
            return frame
    return None


def _module_label(path: str) -> str:
    name = os.path.basename(path)
    return (name[:-3] if name.endswith(".py") else name).lstrip("_")  # torch/_tensor.py: tensor


def _written_call(code: str, line: int, name: str | None) -> str | None:
    """The call on that line of the snippet as written (`time.sleep`, `q.get`): the one named
    like the function the stack is in, else the innermost."""
    covering = [c for c in _calls(code) if c[0] <= line <= c[1]]
    named = [c for c in covering if c[2].rsplit(".", 1)[-1] == name]
    candidates = named or covering
    if not candidates:
        return None
    narrowest = min(end - start for start, end, _ in candidates)
    return [text for start, end, text in candidates if end - start == narrowest][-1]


@functools.lru_cache(maxsize=8)
def _calls(code: str) -> list[tuple[int, int, str]]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in ast.walk(tree):  # outer calls come before the calls nested in them
        if isinstance(node, ast.Call):
            end = node.end_lineno or node.lineno
            found.append((node.lineno, end, ast.unparse(node.func)))
    return found


def cpu_ns(pid: int) -> int | None:
    """CPU time the process has used so far, in ns; None when it is gone.

    Summed over its threads' schedstat (ns, where a blocked rank shows next to nothing), and
    never less than utime + stime (clock ticks, but counting threads that have ended too).
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except (OSError, IndexError, ValueError):
        return None
    threads = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as schedstat:
                threads += int(schedstat.read().split()[0])
    except (OSError, IndexError, ValueError):
        threads = 0  # no schedstat here (or a thread ended meanwhile): the ticks alone
    return max(threads, ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK"))

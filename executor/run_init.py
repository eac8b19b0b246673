"""A run's init: pid 1 of the run's namespaces (when sandboxed), forked by the slot's stager.

It isolates itself, forks the store process (which listens at once) and a staged rank (which
waits for its order), and only then reads its order (the code) from its own request pipe:
nothing it was forked from ever held a request. It writes the snippet, hands the staged rank its
order (forking any further rank it was asked for), says go once the store listens and no spare
staged rank is left, reaps the ranks (and every orphan of the namespace), reports each rank's
end on its status pipe, and acts on the slot worker's signals (stop, dump stacks, look, end the
store).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass
from typing import Any, NoReturn

from executor import exiting, hangstop, prefault, sandbox, stacks, store
from executor import rank as rank_module
from executor.context import ZygoteContext
from executor.gpus import Gpu
from executor.limits import RunBudget, run_budget, shm_bytes
from executor.wire import (
    DUMP_REQUEST_SIGNAL,
    END_STORE_SIGNAL,
    LOOK_REQUEST_SIGNAL,
    SANDBOX_SCRIPT_DIR,
    STOP_SIGNAL,
    RankPipes,
    budget_ranks,
    status_line,
    write_all,
)

READ_CHUNK = 65536
CLEAR_TRIES = 3  # a process forked as the kill went round gets another
SPARES_WAIT_S, SPARES_POLL_S = 2.0, 0.0005  # a spare staged rank's end, before the snippets
# How often init reads the ranks' exits in /proc once every record is in (exiting.py): a
# rank's status settles within a millisecond of its os._exit, its reap comes 6-8 ms later. For
# no longer than the window: a rank may still wait for a joining peer (leaving.py), and a
# record the snippet forged early must not keep init polling for the rest of the run.
EXIT_POLL_S, EXIT_POLL_WINDOW_S = 0.0005, 0.2
STOP_WAIT_S = 0.5  # for everything else in the namespace to take its SIGKILL (_stop_namespace)


@dataclass
class InitSetup:
    """What init is forked with: the context, its sandbox, and its ends of the run's pipes."""

    ctx: ZygoteContext
    plan: sandbox.SandboxPlan | None  # with the run's GPUs' device nodes, if it holds any
    gpus: tuple[Gpu, ...]
    port: int
    status_w: int
    request_r: int
    hello_r: int
    go_r: int  # every rank waits for the go pipe's end before its snippet ...
    go_w: int  # ... which init closes once the store listens (and the snippet is written)
    ranks: list[RankPipes]


class RunInit:
    """The run's init process (never returns)."""

    def __init__(self, setup: InitSetup) -> None:
        self.setup = setup
        self.plan = setup.plan
        self.status_w = setup.status_w
        self.stop_requested = self.stop_sent = False  # stop the ranks (a peer failed)
        self.dump_requested = False  # sample and dump the ranks (the deadline came)
        self.look_requested = False  # look whether the ranks are blocked (hangstop.py)
        self.store_pid = 0
        self.started_store: int | None = None  # the store process, once it listens
        self.store_channel: socket.socket | None = None
        self.end_store_requested = False  # every rank's record is in: end the store
        self.records_in_at: float | None = None  # ... and read the ranks' exits (exiting.py)
        self.reads_exits = False  # set once the ranks run (main)
        self.reported: set[int] = set()  # the ranks whose end the slot has been told

    def main(self) -> NoReturn:
        """Isolate, wait for the order, fork the ranks, report their ends, exit."""
        setup = self.setup
        try:
            for pipes in setup.ranks:
                for read_end, _ in pipes.fds.values():
                    os.close(read_end)
            # A session (and process group) of the run's own, with no controlling terminal:
            # kill(0, ...) in a rank reaches only this run (a pid namespace does not bound a
            # process-group signal), and no rank can reach the terminal the executor was
            # started from (TIOCSTI into the operator's shell). Trusted runs rely on it too:
            # the deadline kills this process group.
            os.setsid()
            if self.plan is not None:
                sandbox.die_with_parent()  # init's death takes the whole pid namespace with it
                limits = setup.ctx.limits
                shm = shm_bytes(limits, gpu=bool(setup.gpus))
                sandbox.isolate_init(self.plan, limits.tmp_bytes, shm)
                self._say({"isolated": True})  # siblings may enter now
        except BaseException as error:
            self._say({"setup_error": str(error)})
            os._exit(70)
        # Before the request: a stop that comes early must not be lost (init is pid 1 of its
        # namespace, which ignores a signal it has no handler for).
        signal.signal(STOP_SIGNAL, self._on_stop)
        signal.signal(DUMP_REQUEST_SIGNAL, self._on_dump_request)
        signal.signal(LOOK_REQUEST_SIGNAL, self._on_look_request)
        signal.signal(END_STORE_SIGNAL, self._on_end_store)
        limits = setup.ctx.limits
        largest = run_budget(
            limits.max_nproc + 1, limits.max_timeout_s, limits, "gloo", len(setup.gpus)
        )
        store_pid, store_channel = store.fork(self.plan, setup.port, largest)
        # Held open while init lives: the store process ends at its end (store._host).
        self.store_channel = store_channel
        self.store_pid = store_pid
        # Forked now, while the cell is staged, so that the request does not wait for a fork
        # of a warm parent: it waits for its order on a pipe of its own (_staged_rank).
        staged = self._stage_rank((setup.request_r, store_channel.fileno()))
        with os.fdopen(setup.request_r, "rb") as source:
            payload = source.read()
        if not payload:
            os._exit(0)  # the slot went away (or discarded the cell) before sending a request
        order = json.loads(payload)
        del payload  # its bytes would outlive the order's dict, which a rank clears (rank.py)
        launcher = order.get("launcher", "torchrun")
        budget = run_budget(budget_ranks(order["nproc"], launcher), order["timeout_s"],
                            setup.ctx.limits, order["backend"], len(setup.gpus))  # fmt: skip
        script = _write_script(order["code"], sandboxed=self.plan is not None)
        # The ranks set themselves up (confine, environment) while init makes sure the store
        # listens, and wait for the go pipe's end before their snippet; so do the siblings'
        # ranks, whose orders the slot sent beside this one.
        pids: dict[int, int] = {}
        local = list(order["local"])
        if staged is not None:
            staged_pid, staged_w = staged
            if local and _hand_over(staged_w, order, local[0], script, budget):
                pids[staged_pid] = local.pop(0)
            else:  # a spare: ended before any snippet runs, which would see it
                with contextlib.suppress(ProcessLookupError):
                    os.kill(staged_pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(staged_pid, 0)
            os.close(staged_w)
        for rank in local:
            pid = os.fork()
            if pid == 0:
                self._become_rank(self._launch(order, rank, script, budget))
            pids[pid] = rank
        os.close(setup.go_r)
        if launcher == "torchrun":
            self.started_store = store.listening(store_pid, store_channel, order["timeout_s"])
        else:
            # `python snippet.py` has no launcher's store: ended (its port closed) first.
            with contextlib.suppress(ProcessLookupError):
                os.kill(store_pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(store_pid, 0)
        if self.plan is not None:
            self._await_spares_gone(set(pids), order["processes"] - len(order["local"]))
        os.close(setup.go_w)  # go: the store listens, the snippet is written, no spare is left
        self._say({"started": True})
        for pipes in setup.ranks:
            for _, write_end in pipes.fds.values():
                os.close(write_end)
        # Sandboxed CPU runs only: there init is root of the pid namespace that holds every rank
        # (no pid in it is reused by another) and, as it is now, may read their exit codes. A
        # GPU run waits for the reap, when a rank's device memory is given back, before its
        # answer frees its GPUs for another run.
        self.reads_exits = (
            self.plan is not None and not setup.gpus and exiting.can_read_exit_codes()
        )
        self._reap_ranks(pids, set(range(order["processes"])))
        self._end_store()
        if self.reads_exits and _stop_namespace():
            # Every rank has ended and nothing else of the run runs code: the slot may answer
            # now, while the kernel tears the ranks (and what was killed) down.
            self._say({"ended": True})
        if self.plan is not None and _clear_namespace():
            # Nothing of the run is left but init: the slot may answer now. Init's own exit
            # (the namespaces' teardown, some 35 ms at load 9) is waited for before the slot
            # stages its next run, not before the answer. Which may have gone already, the
            # ranks' exits having settled first (exiting.py): the slot has closed its end.
            with contextlib.suppress(BrokenPipeError):
                self._say({"cleared": True})
        if self.plan is None:
            shutil.rmtree(os.path.dirname(script), ignore_errors=True)
            os.killpg(0, signal.SIGKILL)  # trusted: stragglers in the group die (setsid escapes)
        os._exit(0)

    def _stage_rank(self, closed: tuple[int, ...]) -> tuple[int, int] | None:
        """Fork a rank that waits for its order (its pid, and where to write the order), or
        None if the fork failed (the rank is then forked after the order, as any other)."""
        order_r, order_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(order_r)
            os.close(order_w)
            return None
        if pid == 0:
            try:
                for fd in (order_w, *closed):
                    os.close(fd)
                prefault.populate(self.setup.ctx.hot_pages)  # while staged (prefault.py)
                prepared = rank_module.prepare(
                    self.setup.ctx.reseed, self.plan is not None, self.plan
                )
                with os.fdopen(order_r, "rb") as source:
                    payload = source.read()
                if not payload:
                    os._exit(0)  # the run has no rank of init's, or init went away
                handed = json.loads(payload)
                del payload
                # Held as a sibling's staged rank holds its own: a snippet finds the same
                # frames and objects whichever parent its rank had (forget_perturbation).
                order = handed["order"]
                launch = self._launch(order, int(handed["rank"]), handed["script"],
                                      RunBudget(**handed["budget"]))  # fmt: skip
                del handed
                self._ready_rank()
                rank_module.run_rank(launch, prepared)
            finally:
                os._exit(70)  # run_rank never returns; if it raised, this fork ends
        os.close(order_r)
        return pid, order_w

    def _become_rank(self, launch: rank_module.RankLaunch) -> NoReturn:
        """In a child of init forked after the order: become a rank of the run."""
        try:
            self._ready_rank()
            rank_module.run_rank(launch)
        finally:
            os._exit(70)  # run_rank never returns; if it raised, this fork ends

    def _launch(
        self, order: dict[str, Any], rank: int, script: str, budget: RunBudget
    ) -> rank_module.RankLaunch:
        """Rank `rank`'s launch: its pipes, the go pipe, init's settings."""
        setup = self.setup
        return rank_module.launch_of(
            order, rank, script, budget, setup.ranks[rank].write_ends(), setup.go_r, self.plan,
            setup.ctx.reseed, setup.ctx.limits.exception_message_chars,
        )  # fmt: skip

    def _ready_rank(self) -> None:
        """In a child of init, once it has its order: what it holds of init's, let go."""
        setup = self.setup
        os.close(setup.hello_r)
        os.close(setup.go_w)  # only init may say go
        signal.signal(STOP_SIGNAL, signal.SIG_DFL)  # init's, not the snippet's
        signal.signal(DUMP_REQUEST_SIGNAL, signal.SIG_DFL)
        signal.signal(LOOK_REQUEST_SIGNAL, signal.SIG_DFL)
        signal.signal(END_STORE_SIGNAL, signal.SIG_DFL)
        if self.plan is not None:
            # A session of its own, as torchrun starts each worker: kill(0, ...) in a
            # rank reaches its own process tree only, and the SIGTERM stop reaches the
            # rank's children too. (Trusted ranks stay in init's group, which the
            # deadline kills; sandboxed ones die with the pid namespace.)
            os.setsid()

    def _await_spares_gone(self, own: set[int], remote: int) -> None:
        """Wait (bounded) until the run's namespace holds only init, the store, init's ranks
        and `remote` ranks of the siblings': a sibling's staged rank the run does not use (the
        slot closed its order pipe) ends on its own, and no snippet may see it."""
        known = own | {1, self.store_pid}
        deadline = time.monotonic() + SPARES_WAIT_S
        while time.monotonic() < deadline:
            if sum(1 for pid in _namespace_pids() if pid not in known) <= remote:
                return
            time.sleep(SPARES_POLL_S)

    def _reap_ranks(self, pids: dict[int, int], expected: set[int]) -> None:
        """Report each rank's exit: init's own children, and siblings' ranks as they tell it."""
        hello_r = self.setup.hello_r
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake select on a child's exit
        signal.set_wakeup_fd(wake_w)
        buffer = b""
        watching = [hello_r, wake_r]
        remote: dict[int, int] = {}  # siblings' ranks still running: pid in the cell -> rank
        look: hangstop.Look | None = None  # a look for verify's early stop, under way
        while expected:
            if self.end_store_requested:
                self._end_store()
            if self.stop_requested and not self.stop_sent:
                self.stop_sent = True
                self._terminate_ranks(set(pids))
            if self.dump_requested:
                self.dump_requested, look = False, None  # the deadline's dump replaces a look
                self._dump_ranks({**pids, **remote})
            if self.look_requested and look is None:
                self.look_requested = False
                look = hangstop.Look({**pids, **remote}, time.monotonic())
            if look is not None and time.monotonic() >= look.due:
                self._answer_look(look, {**pids, **remote}, len(expected))
                look = None
            polling = self._polling_exits()
            if polling:
                self._report_settled(pids, remote, expected)
            while True:
                try:
                    pid, wait_status = os.waitpid(-1, os.WNOHANG)  # orphans are reaped too
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                if pid in pids:
                    code = os.waitstatus_to_exitcode(wait_status)
                    expected.discard(self._report(pids.pop(pid), code))
            if not expected:
                break
            wait_s = 1.0 if look is None else min(1.0, max(0.0, look.due - time.monotonic()))
            if polling:
                wait_s = min(wait_s, EXIT_POLL_S)
            if hello_r in select.select(watching, [], [], wait_s)[0]:
                data = os.read(hello_r, READ_CHUNK)
                if not data:
                    watching.remove(hello_r)
                *lines, buffer = (buffer + data).split(b"\n")
                for line in lines:
                    ended = json.loads(line)
                    if "pid" in ended:  # a sibling's rank has started (see siblings.py)
                        remote[int(ended["pid"])] = int(ended["rank"])
                        continue
                    if "setup_error" in ended:
                        # A sibling's staged rank could not start (a failed fork under load):
                        # the run is refused, as when it fails before the request; pid 1's
                        # exit ends the namespace and every rank in it.
                        self._say(ended)
                        os._exit(70)
                    remote = {p: r for p, r in remote.items() if r != int(ended["rank"])}
                    expected.discard(self._report(int(ended["rank"]), int(ended["wait"])))
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, READ_CHUNK)

    def _on_stop(self, signum: int, frame: object) -> None:
        self.stop_requested = True  # acted on by _reap_ranks (select wakes up on the signal)

    def _on_dump_request(self, signum: int, frame: object) -> None:
        self.dump_requested = True  # acted on by _reap_ranks, as a stop is

    def _on_look_request(self, signum: int, frame: object) -> None:
        self.look_requested = True  # acted on by _reap_ranks, as a stop is

    def _on_end_store(self, signum: int, frame: object) -> None:
        self.end_store_requested = True  # acted on by _reap_ranks, as a stop is
        if self.records_in_at is None:
            self.records_in_at = time.monotonic()

    def _polling_exits(self) -> bool:
        at = self.records_in_at
        return self.reads_exits and at is not None and time.monotonic() - at < EXIT_POLL_WINDOW_S

    def _report_settled(
        self, pids: dict[int, int], remote: dict[int, int], expected: set[int]
    ) -> None:
        """Report each rank whose exit status the kernel has settled, before its teardown
        (exiting.py): every rank has written its record, so each is about to exit. Init's own
        ranks are still reaped, and the siblings' still reported by their parents; neither is
        told to the slot twice."""
        for pid, rank in [*pids.items(), *remote.items()]:
            if rank in expected:
                code = exiting.settled_exit_code(pid)
                if code is not None:
                    expected.discard(self._report(rank, code))

    def _end_store(self) -> None:
        """Kill the store process (once): the ranks have ended, or have all written their record."""
        self.end_store_requested = False
        if self.started_store is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.started_store, signal.SIGKILL)
            self.started_store = None

    def _answer_look(self, look: hangstop.Look, running: dict[int, int], waiting: int) -> None:
        """Tell the slot what the look found; if every rank was blocked, have them dump their
        stacks (after the answer: the slot reads the dumps that follow it)."""
        answer = look.finish(running, waiting, {self.store_pid, *running})
        self._say({"look": answer})
        if answer["idle"]:
            for pid in running:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, stacks.DUMP_SIGNAL)

    def _dump_ranks(self, running: dict[int, int]) -> None:
        """Sample each running rank's CPU time, then signal it to dump its stack; report the CPU.

        Sampled before the signal, so the dump's own work is not counted: a rank blocked in a
        collective uses (next to) none, a slow but working one does."""
        before = {pid: stacks.cpu_ns(pid) for pid in running}
        time.sleep(stacks.SAMPLE_S)
        cpu: dict[str, int] = {}
        for pid, rank in running.items():
            after, start = stacks.cpu_ns(pid), before[pid]
            if after is not None and start is not None:
                cpu[str(rank)] = max(0, after - start) // 1_000_000
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, stacks.DUMP_SIGNAL)
        self._say({"cpu": cpu, "sample_ms": int(stacks.SAMPLE_S * 1000)})

    def _terminate_ranks(self, local: set[int]) -> None:
        """Send SIGTERM to every rank still running, to its process group, as torchrun does."""
        running = set(local)
        if self.plan is not None:
            # Ranks a sibling started have their parent outside this pid namespace: their
            # parent pid reads 0 here (as does init's own, pid 1).
            running |= {pid for pid in _namespace_pids() if pid != 1 and _parent(pid) == 0}
        for pid in running:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:  # not a group leader: the rank alone
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)

    def _report(self, rank: int, code: int) -> int:
        if rank not in self.reported:
            self.reported.add(rank)
            self._say({"rank": rank, "wait": code})
        return rank

    def _say(self, message: dict[str, Any]) -> None:
        os.write(self.status_w, status_line(message))


def become(setup: InitSetup) -> NoReturn:
    """Run as the run's init, in the child the stager just forked."""
    RunInit(setup).main()


def _hand_over(
    staged_w: int, order: dict[str, Any], rank: int, script: str, budget: RunBudget
) -> bool:
    """Write rank `rank`'s order to the staged rank; whether it took it (it may have died)."""
    handed = {"order": order, "rank": rank, "script": script, "budget": dataclasses.asdict(budget)}
    try:
        write_all(staged_w, json.dumps(handed).encode())
    except OSError:
        return False
    return True


def script_path(sandboxed: bool) -> str:
    """Where a run's snippet file lives (the same path for every rank of a sandboxed run)."""
    directory = SANDBOX_SCRIPT_DIR if sandboxed else tempfile.mkdtemp(prefix="ranklab-run-")
    return os.path.join(directory, rank_module.SNIPPET_NAME)


def _write_script(code: str, sandboxed: bool) -> str:
    """Write the snippet to a real file the ranks can read (and its children re-import)."""
    # Inside the sandbox /tmp is the run's private tmpfs; the file stays root-owned, read-only
    # for the ranks. A trusted run gets a directory of its own, removed when the run ends.
    path = script_path(sandboxed)
    directory = os.path.dirname(path)
    os.chmod(directory, 0o1777 if sandboxed else 0o755)
    with open(path, "w", encoding="utf-8") as file:
        file.write(code)
    os.chmod(path, 0o644)
    return path


def _stop_namespace() -> bool:
    """Kill every other process of the run's pid namespace and wait (bounded) until none of
    them runs code any more, without waiting for their teardown (exiting.py); whether so."""
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # from pid 1: every process of the namespace but init
        if all(exiting.past_exit(pid) for pid in _namespace_pids() if pid != 1):
            return True
        time.sleep(EXIT_POLL_S)
    return False


def _clear_namespace() -> bool:
    """Kill and reap every other process of the run's pid namespace (init is its pid 1);
    whether none is left (a sibling's rank is reaped by its own parent, before it reports)."""
    for _ in range(CLEAR_TRIES):
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # from pid 1: every process of the namespace but init
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        if _namespace_pids() == [1]:
            return True
    return False


def _namespace_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None

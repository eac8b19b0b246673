"""The slot worker's side of one run: hand init its order, have siblings start their ranks, pump
the output until the ranks end or a limit hits, and judge each rank.

The run's processes were staged by the slot's stager (stager.py) before the request came; this
side holds only the parent's ends of their pipes and init's pidfd. It never forks.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from executor import hangstop, records, sandbox, siblings, stacks
from executor import rank as rank_module
from executor.context import ZygoteContext
from executor.contract import RankStatus, RunStatus, StuckAt
from executor.gpus import Gpu, rank_environment
from executor.limits import RunBudget, rank_status, run_status
from executor.output import Output, RankOutput, Send
from executor.wire import (
    DUMP_REQUEST_SIGNAL,
    END_STORE_SIGNAL,
    LOOK_REQUEST_SIGNAL,
    SANDBOX_SCRIPT_DIR,
    STOP_SIGNAL,
    RankPipes,
    RunOrder,
    StagedCell,
    budget_ranks,
    write_all,
)

# Once a rank fails, torchrun 2.13 stops the others as its agent does (LocalElasticAgent
# ._stop_workers -> PContext.close): at its next check of the workers (every monitor_interval,
# 0.1 s) it sends SIGTERM to each worker still running (to its process group), waits up to 30 s
# for them all, then SIGKILLs what is left. A rank's SIGTERM handler runs and prints (graceful
# shutdown, checkpoint-on-signal), and a rank without one ends with -15. Here the wait is
# also bounded by the run's deadline.
MONITOR_INTERVAL_S = 0.1
STOP_GRACE_S = 30.0
READ_CHUNK = 65536
STAGE_TIMEOUT_S = 5.0
INIT_END_WAIT_S = 5.0  # init dies with SIGKILL at once; this only bounds a wedged kernel


class RunDriver:
    """One staged run, seen from the slot worker: used once."""

    def __init__(
        self,
        ctx: ZygoteContext,
        cell: StagedCell,
        plan: sandbox.SandboxPlan | None,
        cgroups: sandbox.SlotCgroups | None,
        stager_pid: int,
        sibling_paths: Sequence[str] = (),
        gpus: tuple[Gpu, ...] = (),
    ) -> None:
        self.ctx = ctx
        self.cell = cell
        self.gpus = gpus
        self.plan = plan
        self.cgroups = cgroups
        self.stager_pid = stager_pid  # the cgroup sweep spares it, not its children (inits)
        self.sandboxed = not ctx.trusted
        # Siblings (other warm parents, see siblings.py) join a run through its namespaces,
        # so only sandboxed runs use them.
        self.sibling_paths = list(sibling_paths) if plan is not None else []
        self.pipes: list[RankPipes] = list(cell.ranks)
        self.output = Output(len(self.pipes), ctx.limits.exception_message_chars)
        self.status_buffer = b""
        self.isolated = self.started = False
        self.cleared = False  # init has killed and reaped all else in the run's namespace
        self.ended = False  # every rank has ended and nothing else in the namespace runs code
        self.unsettled = False  # init's own end is still to be awaited (settle)
        self.max_rank_delay_s = 0.0  # verify's perturbation: the longest delay a rank was given
        # Parents drawn when the cell is staged (rank k: entry k modulo its length), and the
        # siblings' ranks staged in it then, by rank: where to write each one's order.
        self.parents: list[int | None] = []
        self.staged: dict[int, int] = {}
        self.wait_codes: dict[int, int] = {}
        self.setup_error: str | None = None
        self.timed_out = self.memory_exceeded = False
        self.cpu_ms: dict[int, int] = {}  # CPU time per rank over the sample, from init
        self.sample_ms: int | None = None
        self.watch: hangstop.Watch | None = None  # verify's early stop, when asked for
        self.stopped_when_stuck = False
        self.oom_before = 0
        self.code = ""
        self.store_ended = False  # init was told to end the store (every record is in)

    @property
    def init_pid(self) -> int:
        """Init's pid, as the slot worker's pid namespace sees it."""
        return self.cell.init_pid

    def stage_siblings(self) -> None:
        """Draw the ranks' parents and have the siblings among them stage their rank now.

        A sibling's rank costs two forks of a warm parent and the entry into the cell's
        namespaces (10-50 ms each on 2 loaded cores), and the run's slowest rank holds up its
        rendezvous: staged, a sibling's rank is forked in the cell and waits there for its order
        (siblings.STAGED_RANKS: a run's first two). Waits until init has built the namespaces (a
        few ms; the slot takes no request meanwhile). A rank not staged now is staged at run
        time.
        """
        available = [index for index, path in enumerate(self.sibling_paths) if os.path.exists(path)]
        if not available:
            return
        self.parents = siblings.draw_parents(available)
        try:
            self._await_status(lambda: self.isolated, time.monotonic() + STAGE_TIMEOUT_S)
        except sandbox.SandboxError:
            return  # init failed: the run reports its setup error
        for rank, parent in enumerate(self.parents[: min(len(self.pipes), siblings.STAGED_RANKS)]):
            if parent is None or self.setup_error is not None:
                continue
            with contextlib.suppress(sandbox.SandboxError):
                self.staged[rank] = self._stage_sibling_rank(rank, parent)

    def _stage_sibling_rank(self, rank: int, parent: int) -> int:
        fds = {**self.pipes[rank].write_ends(), "hello": self.cell.hello_w, "go": self.cell.go_r}
        prefault = rank < siblings.STAGED_RANKS
        return siblings.stage_rank(self.sibling_paths[parent], self.init_pid, fds, prefault)

    def discard(self) -> None:
        """End a staged run that will not be used (staged for other GPUs)."""
        # Nothing but init and its store process is in it yet (trusted: in init's group). Init
        # itself first: it may not have made its group yet, and killpg alone would miss it.
        self._signal(signal.SIGKILL)
        if not self.sandboxed:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.init_pid, signal.SIGKILL)
        self._await_init_end()
        for fd in self.staged.values():
            os.close(fd)
        self.cell.close()

    def execute(
        self,
        request: dict[str, Any],
        budget: RunBudget,
        send: Send,
        deadline: float,
        backend: str = "gloo",
    ) -> dict[str, Any]:
        """Hand the request to init, pump output until the ranks end or a limit hits, judge."""
        self.output.budget = budget
        self.output.send = send
        self.code = str(request["code"])
        nproc = int(request["nproc"])
        launcher = request.get("launcher", "torchrun")
        processes = 1 if launcher == "python" else nproc
        for pipes in self.pipes[processes:]:
            pipes.close()
        self.pipes = self.pipes[:processes]
        self.output.ranks = self.output.ranks[:processes]
        if self.parents:
            parents = [self.parents[index % len(self.parents)] for index in range(processes)]
        else:
            available = [i for i, path in enumerate(self.sibling_paths) if os.path.exists(path)]
            parents = siblings.choose_parents(processes, available)
        order: RunOrder = {
            "code": request["code"],
            "nproc": nproc,
            "port": self.cell.port,
            "timeout_s": request["timeout_s"],
            "launcher": launcher,
            "backend": backend,  # resolved: ranks started elsewhere size their budget alike
            "gpu_count": len(self.gpus),  # so do the GPUs the run holds
            # CUDA_VISIBLE_DEVICES (empty for a CPU run on a GPU host), NCCL's socket
            "environment": rank_environment(self.gpus, bool(self.ctx.gpus)),
            "run_id": str(uuid.uuid4()),
            "processes": processes,
            "local": [rank for rank, parent in enumerate(parents) if parent is None],
            "rank_delays_s": list(request.get("rank_delays_s") or []),
        }
        self.max_rank_delay_s = max(order["rank_delays_s"], default=0.0)
        # Unsandboxed (trusted) runs have no pid namespace, so an orphan of a rank's would not
        # come back to init and the look could not see it: never stopped early there.
        if self.plan is not None and hangstop.refusal(request, backend) is None:
            self.watch = hangstop.Watch(time.monotonic())
        self.oom_before = self.cgroups.oom_kills() if self.cgroups is not None else 0
        try:
            write_all(self.cell.request_w, json.dumps(order).encode())
        except OSError:
            pass  # init died while waiting: its status pipe says why, or the run ends killed
        finally:
            os.close(self.cell.request_w)
        try:
            self._start_sibling_ranks(order, parents)
            self._pump(deadline)
        finally:
            # Once every rank has ended and nothing else in the namespace runs code (init
            # says `ended`, before the teardowns, then `cleared`), nothing more will be written
            # to the pipes: the answer need not wait for the teardowns nor init's own end,
            # which settle() awaits before the slot stages its next run.
            self.unsettled = True
            if not (self.cleared or self.ended):
                self.settle()
            self._drain()
            self.memory_exceeded |= self._oom_killed()
        if self.setup_error is not None:
            return {"status": RunStatus.REJECTED, "message": f"sandbox setup: {self.setup_error}"}
        return self._outcome()

    def settle(self) -> None:
        """Kill what is left of the run in the slot's cgroups and wait for init's end."""
        if self.unsettled:
            self.unsettled = False
            self._kill()
            self._await_init_end()
            os.close(self.cell.pidfd)

    def _start_sibling_ranks(self, order: RunOrder, parents: list[int | None]) -> None:
        """Have the siblings' staged ranks start the other ranks (each waits for the go pipe's
        end, which init closes once the store listens, before its snippet).

        A rank's order (the code) goes only through its staged child's own pipe: a sibling's
        worker, which forks every rank it stages, never holds a request."""
        remote = [(rank, parent) for rank, parent in enumerate(parents) if parent is not None]
        try:
            for rank, parent in remote:
                if self.setup_error is not None:
                    return
                request = {
                    **order,
                    "rank": rank,
                    "script": os.path.join(SANDBOX_SCRIPT_DIR, rank_module.SNIPPET_NAME),
                    "budget_ranks": budget_ranks(order["nproc"], order["launcher"]),
                    "uid": self.plan.uid if self.plan is not None else None,  # the slot's own
                }
                request.pop("local", None)
                staged = self.staged.pop(rank, None)
                if staged is None:
                    staged = self._stage_sibling_rank(rank, parent)
                try:
                    write_all(staged, json.dumps(request).encode())
                finally:
                    os.close(staged)
        except (sandbox.SandboxError, OSError) as error:
            self.setup_error = str(error)
        finally:
            for staged in self.staged.values():
                os.close(staged)  # ranks this run does not have: their waiting children end
            self.staged.clear()
            for pipes in self.pipes:
                for _, write_end in pipes.fds.values():
                    os.close(write_end)
            os.close(self.cell.hello_w)
            os.close(self.cell.go_r)

    def _await_status(self, reached: Callable[[], bool], deadline: float) -> None:
        while not reached() and self.setup_error is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.cell.status_r], [], [], remaining)[0]:
                raise sandbox.SandboxError("the run's init did not start in time")
            data = os.read(self.cell.status_r, READ_CHUNK)
            if not data:
                raise sandbox.SandboxError("the run's init ended before starting the ranks")
            self.status_buffer = self._status_lines(self.status_buffer + data)

    def _pump(self, deadline: float) -> None:
        poller = select.poll()
        sources = self._sources()
        for fd in sources:
            poller.register(fd, select.POLLIN)
        init_fd = self.cell.pidfd
        poller.register(init_fd, select.POLLIN)
        # The client's socket, where the slot worker gave it: its hang-up ends the run (Stop).
        hangup_fd: int | None = getattr(self.output.send, "hangup_fd", None)
        if hangup_fd is not None:
            poller.register(hangup_fd, select.POLLRDHUP)
        stop_at: float | None = None  # when to stop the ranks, a failure having been seen
        # A perturbed run delays ranks before the snippet and before their first write, which
        # may come late (after training steps): the stop after a failure waits out both delays
        # on top of torchrun's interval, as if the ranks had run together (under torchrun a
        # peer's failure never cuts a rank short by the perturbation's design). Unperturbed
        # runs (every learner's) stop as torchrun does.
        perturbation_s = 2 * self.max_rank_delay_s
        grace_deadline: float | None = None  # when to kill what the stop left running
        while True:
            now = time.monotonic()
            flush_at = self.output.flush_due(now)
            if now >= deadline:
                # A run that already failed is not a hang: its stop was cut short.
                self.timed_out = stop_at is None
                if self.timed_out:
                    self._capture_stacks()
                return
            if grace_deadline is not None and now >= grace_deadline:
                return
            if self.watch is not None and stop_at is None and self._watch_stuck(now):
                self.timed_out = self.stopped_when_stuck = True  # a hang, proven early
                return
            if stop_at is not None and grace_deadline is None and now >= stop_at:
                self._signal(STOP_SIGNAL)
                grace_deadline = now + STOP_GRACE_S
            limit = min(deadline, grace_deadline or stop_at or deadline) - now
            if self.watch is not None and stop_at is None:
                limit = min(limit, max(0.0, self.watch.wake_at(now) - now))
            if flush_at is not None:
                limit = min(limit, max(0.0, flush_at - now))
            for fd, _ in poller.poll(max(1, int(limit * 1000))):
                if fd == init_fd:
                    return
                if fd == hangup_fd:
                    self.output.orphaned = True  # nobody will read the rest: stop the ranks
                    return
                self._read_ready(fd, poller, sources)
            failed = any(code != 0 for code in self.wait_codes.values())
            if failed and stop_at is None:
                stop_at = time.monotonic() + perturbation_s + MONITOR_INTERVAL_S
            if self.cleared or self.ended or self.setup_error:
                return
            if self.output.exceeded or self.output.orphaned:
                return
            killed = any(code == -signal.SIGKILL for code in self.wait_codes.values())
            if killed and self._oom_killed():
                self.memory_exceeded = True
                return

    def _watch_stuck(self, now: float) -> bool:
        """Verify's early stop (hangstop.py): ask init for a look, read its answer and the
        dumps that follow; True once the looks prove every rank still running stuck."""
        watch = self.watch
        assert watch is not None
        output = self.output
        if watch.ask_now(now):
            for rank in output.ranks:
                rank.stack = b""
            output.capturing = True
            if not self._signal(LOOK_REQUEST_SIGNAL):
                self.watch = None
                return False
            watch.asked(now)
            return False
        answer = watch.answer
        if answer is None:
            if watch.overdue(now):
                output.capturing = False
                watch.settle(None, {}, now)
            return False
        live = [rank for rank in output.ranks if rank.rank not in self.wait_codes]
        if answer["idle"]:
            dumped = all(rank.stack for rank in live)
            quiet = now - output.stack_at >= stacks.DUMP_QUIET_S
            if not (dumped and quiet) and now < watch.answered_at + stacks.DUMP_WAIT_S:
                return False  # the dumps are still coming
        output.capturing = False
        if not answer["idle"]:
            return watch.settle(None, {}, now)
        cpu = {int(rank): int(ms) for rank, ms in answer["cpu"].items()}
        window_ms = int(answer["window_ms"])
        stuck = {rank.rank: self._stuck_at(rank, cpu.get(rank.rank), window_ms) for rank in live}
        threads = {rank.rank: len(stacks.threads(rank.stack)) for rank in live}
        if not watch.settle(stuck, threads, now):
            return False
        self.cpu_ms, self.sample_ms = cpu, window_ms  # the last look's, shown with the stacks
        return True

    def _stuck_at(self, rank: RankOutput, cpu_ms: int | None, window_ms: int | None) -> StuckAt:
        return stacks.stuck_at(rank.stack, self.code, rank_module.SNIPPET_NAME, cpu_ms, window_ms)

    def _capture_stacks(self) -> None:
        """At a time-out, before the kill: have init sample and signal the ranks, read the dumps.

        Bounded (stacks.SAMPLE_S + DUMP_WAIT_S at most), and it changes nothing about how the
        run is judged: ranks that end meanwhile were still running at the deadline."""
        wait_codes = dict(self.wait_codes)
        output = self.output
        for rank in output.ranks:
            rank.stack = b""  # what a look of verify's early stop left
        self.cpu_ms, self.sample_ms, self.watch = {}, None, None
        output.capturing = True
        started = time.monotonic()
        cutoff = started + stacks.SAMPLE_S + stacks.DUMP_WAIT_S
        poller = select.poll()
        sources = {fd: s for fd, s in self._sources().items() if s is None or s[1] == "stack"}
        for fd in sources:
            poller.register(fd, select.POLLIN)
        last_data = started
        try:
            if not self._signal(DUMP_REQUEST_SIGNAL):
                return
            while (now := time.monotonic()) < cutoff:
                signalled = self.sample_ms is not None  # init has sampled and signalled them
                dumped = all(rank.stack for rank in output.ranks if rank.rank not in wait_codes)
                if signalled and dumped and now - last_data >= stacks.DUMP_QUIET_S:
                    break  # every rank has answered, and the dumps have stopped coming
                for fd, _ in poller.poll(max(1, int(stacks.DUMP_QUIET_S * 1000))):
                    read = self._read_ready(fd, poller, sources)
                    if read and sources[fd] is not None:  # a dump, not a status line
                        last_data = time.monotonic()
        except ValueError:
            pass  # init sent a line that is not its own: no stacks
        finally:
            self.wait_codes = wait_codes

    def _read_ready(
        self, fd: int, poller: select.poll, sources: dict[int, tuple[RankOutput, str] | None]
    ) -> bool:
        """Read a ready pipe: init's status lines, or a rank's output. False at its end, which
        is then no longer polled."""
        data = os.read(fd, READ_CHUNK)
        if not data:
            poller.unregister(fd)
            return False
        source = sources[fd]
        if source is None:
            self.status_buffer = self._status_lines(self.status_buffer + data)
        else:
            self.output.take(source[0], source[1], data)
            if source[1] == "result" and not self.store_ended and self._records_in():
                # Every rank's snippet has ended: its store's exit may overlap theirs.
                self.store_ended = True
                self._signal(END_STORE_SIGNAL)
        return True

    def _records_in(self) -> bool:
        """Whether every rank has written its whole record (a forged early one only costs its
        own run the store)."""
        return all(rank.record.endswith(b"\n") or rank.record_overflowed
                   for rank in self.output.ranks)  # fmt: skip

    def _signal(self, signum: int) -> bool:
        """Send init a signal through its pidfd; False once it has ended."""
        try:
            signal.pidfd_send_signal(self.cell.pidfd, signum)
        except ProcessLookupError:
            return False
        return True

    def _oom_killed(self) -> bool:
        cgroups = self.cgroups
        return cgroups is not None and cgroups.oom_kills() > self.oom_before

    def _sources(self) -> dict[int, tuple[RankOutput, str] | None]:
        sources: dict[int, tuple[RankOutput, str] | None] = {self.cell.status_r: None}
        for pipes, rank in zip(self.pipes, self.output.ranks, strict=True):
            for name, (read_end, _) in pipes.fds.items():
                sources[read_end] = (rank, name)
        return sources

    def _status_lines(self, buffer: bytes) -> bytes:
        *lines, rest = buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "setup_error" in message:
                self.setup_error = message["setup_error"]
            elif "cleared" in message:
                self.cleared = True
            elif "ended" in message:
                self.ended = True
            elif "started" in message:
                self.started = True
            elif "isolated" in message:
                self.isolated = True
            elif "look" in message:
                if self.watch is not None:
                    self.watch.answer = message["look"]
                    self.watch.answered_at = time.monotonic()
            elif "cpu" in message:
                self.cpu_ms = {int(rank): int(ms) for rank, ms in message["cpu"].items()}
                self.sample_ms = int(message["sample_ms"])
            else:
                self.wait_codes[message["rank"]] = message["wait"]
        return rest

    def _drain(self) -> None:
        """Read what is left in the pipes; every writer is dead (or, if trusted, detached)."""
        for fd, source in self._sources().items():
            os.set_blocking(fd, False)
            buffer = self.status_buffer if source is None else b""
            while True:
                try:
                    data = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    break
                if source is None:
                    buffer = self._status_lines(buffer + data)
                elif not self.output.exceeded or source[1] == "result":
                    self.output.take(source[0], source[1], data)
            os.close(fd)
        self.output.finish()

    def _kill(self) -> None:
        if self.sandboxed:
            self._signal(signal.SIGKILL)  # pid 1 dies: the namespace dies
        else:
            try:
                os.killpg(self.init_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self._signal(signal.SIGKILL)
        if self.cgroups is not None:
            workers = siblings.worker_pids(self.sibling_paths)
            self.cgroups.kill_all_but(workers, (self.stager_pid,))

    def _await_init_end(self) -> None:
        """Wait until init has ended (its pidfd reads ready; the stager reaps it)."""
        select.select([self.cell.pidfd], [], [], INIT_END_WAIT_S)

    def _stuck(self, rank: RankOutput) -> dict[str, Any]:
        return self._stuck_at(rank, self.cpu_ms.get(rank.rank), self.sample_ms).model_dump()

    def _outcome(self) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        statuses: list[RankStatus] = []
        problems: list[str] = []
        for rank in self.output.ranks:
            # The status and exit code are the kernel's (wait status); the record only adds
            # the exception, once checked (records.py).
            status, exit_code = rank_status(self.wait_codes.get(rank.rank), self.timed_out)
            try:
                record = records.parse(rank.record, rank.rank, self.output.exception_chars,
                                       rank.record_overflowed)  # fmt: skip
            except records.RecordError as error:
                record = None
                # A rank killed mid-write leaves half a record: only one that ended on its own
                # and still sent a bad one tampered with it (whatever it claims, an error).
                if status in (RankStatus.OK, RankStatus.ERROR):
                    problems.append(f"rank {rank.rank} wrote a result record on fd 3 that is "
                                    f"{error}")  # fmt: skip
                    status = RankStatus.ERROR
            statuses.append(status)
            results.append(
                {
                    "rank": rank.rank,
                    "status": status,
                    "exit_code": exit_code,
                    "stdout": rank.stdout(),
                    "stderr": rank.stderr(),
                    "truncated": rank.truncated,
                    "exception": record.exception if record else None,
                    "unseeded_random": bool(record and record.unseeded_random),
                    "stuck": self._stuck(rank) if status is RankStatus.TIMEOUT else None,
                }
            )
        run = run_status(
            statuses,
            timed_out=self.timed_out,
            memory_exceeded=self.memory_exceeded,
            output_exceeded=self.output.exceeded,
        )
        outcome: dict[str, Any] = {"status": run, "ranks": results}
        if self.stopped_when_stuck:
            outcome["stopped_when_stuck"] = True
        if problems:
            outcome["message"] = "; ".join(problems)
        return outcome

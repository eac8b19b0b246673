"""One run's cell: its init process (pid 1 of the run's namespaces), the ranks, and their pipes.

The cell is staged before its request arrives; then it forks the ranks, pumps their output,
enforces the deadline and the output/memory caps, and judges each rank.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import json
import os
import random
import select
import shutil
import signal
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from executor import hangstop, records, sandbox, siblings, stacks
from executor import rank as rank_module
from executor.contract import RankStatus, RunStatus, StuckAt
from executor.gpus import Gpu, rank_environment
from executor.limits import RunBudget, rank_status, run_budget, run_status, shm_bytes
from executor.ports import free_port

if TYPE_CHECKING:
    from executor.supervisor import ZygoteContext

# Once a rank fails, torchrun 2.13 stops the others as its agent does (LocalElasticAgent
# ._stop_workers -> PContext.close): at its next check of the workers (every monitor_interval,
# 0.1 s) it sends SIGTERM to each worker still running (to its process group), waits up to 30 s
# for them all, then SIGKILLs what is left. A rank's SIGTERM handler runs and prints (graceful
# shutdown, checkpoint-on-signal), and a rank without one ends with -15. Here the wait is
# also bounded by the run's deadline.
MONITOR_INTERVAL_S = 0.1
STOP_GRACE_S = 30.0
# What the slot worker sends the run's init to have it stop the ranks (init is pid 1 of the
# run's pid namespace: only a signal it handles reaches it from outside).
STOP_SIGNAL = signal.SIGUSR1
# ... and to have it sample the ranks' CPU time and signal them to dump their stacks (stacks.py).
DUMP_REQUEST_SIGNAL = signal.SIGUSR2
# ... and to have it look whether every rank is blocked, for verify's early stop (hangstop.py).
LOOK_REQUEST_SIGNAL = signal.SIGURG
# Each sandboxed run has its own network namespace, so any port is free; like torchrun, which
# binds port 0, a run gets a different one from the ephemeral range each time.
EPHEMERAL_PORTS = (32768, 60999)
READ_CHUNK = 65536
# How long init waits for the store process to listen. It must not give up early: a store that
# answers after init stopped waiting finds its channel closed and exits, so ranks that already
# joined it lose their connection ("Connection closed by peer") and the others cannot join. On 2
# loaded cores its start took over 5 s in about 2.5% of 3-rank runs. The run's own deadline
# still bounds the run.
AGENT_STORE_START_S = 60.0
STAGE_TIMEOUT_S = 5.0
SANDBOX_SCRIPT_DIR = "/tmp"

Send = Callable[[dict[str, Any]], None]


@dataclass
class RankIO:
    rank: int
    fds: dict[str, tuple[int, int]]  # stream name -> (read end, write end)
    text: dict[str, list[str]] = field(default_factory=lambda: {"stdout": [], "stderr": []})
    decoders: dict[str, Any] = field(default_factory=dict)
    record: bytes = b""
    record_overflowed: bool = False
    stack: bytes = b""  # its stack dump, kept only once asked for (see Cell._capture_stacks)
    bytes_seen: int = 0
    truncated: bool = False

    @classmethod
    def open(cls, rank: int) -> RankIO:
        """Create the rank's stdout, stderr and result pipes."""
        return cls(rank, {name: os.pipe() for name in siblings.STREAMS})


class Cell:
    """One run's init process and pipes: created ahead of the request, used once.

    A cell is staged for a set of GPUs (none, usually): their device nodes are in its root from
    the start, so a run holding other GPUs needs a cell of its own (Slot.run stages it).
    """

    def __init__(
        self,
        ctx: ZygoteContext,
        plan: sandbox.SandboxPlan | None,
        cgroups: sandbox.SlotCgroups | None,
        sibling_paths: Sequence[str] = (),
        gpus: tuple[Gpu, ...] = (),
    ) -> None:
        self.ctx = ctx
        self.gpus = gpus
        self.plan = plan
        if plan is not None and gpus:
            self.plan = sandbox.with_gpus(plan, [gpu.minor for gpu in gpus])
        self.cgroups = cgroups
        self.sandboxed = not ctx.trusted
        # Siblings (other warm parents, see siblings.py) join a run through its namespaces,
        # so only sandboxed runs use them.
        self.sibling_paths = list(sibling_paths) if plan is not None else []
        self.ranks = [RankIO.open(r) for r in range(ctx.limits.max_nproc)]
        self.status_r, self.status_w = os.pipe()
        self.request_r, self.request_w = os.pipe()
        self.hello_r, self.hello_w = os.pipe()  # ranks from siblings tell init their pid
        self.status_buffer = b""
        self.isolated = self.started = False
        self.max_rank_delay_s = 0.0  # verify's perturbation: the longest delay a rank was given
        # Parents drawn when the cell is staged (rank k: entry k modulo its length), and the
        # siblings' ranks staged in it then, by rank: where to write each one's order.
        self.parents: list[int | None] = []
        self.staged: dict[int, int] = {}
        self.wait_codes: dict[int, int] = {}
        self.setup_error: str | None = None
        self.total_bytes = 0
        self.timed_out = self.output_exceeded = self.memory_exceeded = self.orphaned = False
        self.init_pid = 0
        # Chosen when the cell is staged: the store process is forked then (see
        # _fork_agent_store), before the request.
        self.port = random.randint(*EPHEMERAL_PORTS) if plan is not None else free_port()
        self.stop_requested = self.stop_sent = False  # init: stop the ranks (a peer failed)
        self.dump_requested = False  # init: sample and dump the ranks (the deadline came)
        self.look_requested = False  # init: look whether the ranks are blocked (hangstop.py)
        self.store_pid = 0  # init: the process hosting the run's store
        self.capturing = False  # slot: stack dumps are wanted now
        self.cpu_ms: dict[int, int] = {}  # slot: CPU time per rank over the sample, from init
        self.sample_ms: int | None = None
        self.watch: hangstop.Watch | None = None  # slot: verify's early stop, when asked for
        self.stack_at = 0.0  # slot: when stack dump bytes last came
        self.stopped_when_stuck = False
        self.oom_before = 0
        self.budget = run_budget(1, 1.0, ctx.limits)
        self.code = ""

    @classmethod
    def start(
        cls,
        ctx: ZygoteContext,
        plan: sandbox.SandboxPlan | None,
        cgroups: sandbox.SlotCgroups | None,
        own_pid_namespace: int,
        sibling_paths: Sequence[str] = (),
        gpus: tuple[Gpu, ...] = (),
    ) -> Cell:
        """Fork the run's init (in new namespaces when sandboxed); it waits for a request."""
        cell = cls(ctx, plan, cgroups, sibling_paths, gpus)
        if cell.plan is not None:
            sandbox.detach_pid_namespace()  # the init forked next is pid 1 of a new namespace
        cell.init_pid = os.fork()
        if cell.init_pid == 0:
            cell._init_main()
        if cell.plan is not None:
            sandbox.restore_pid_namespace(own_pid_namespace)
        # The ranks' write ends stay open here until the run: a sibling may need them.
        os.close(cell.status_w)
        os.close(cell.request_r)
        os.close(cell.hello_r)
        cell._stage_sibling_ranks()
        return cell

    def discard(self) -> None:
        """End a staged cell that will not be used (staged for other GPUs) and reap its init."""
        # Nothing but init and its store process is in it yet (trusted: in init's group). Init
        # itself first: it may not have made its group yet, and killpg alone would miss it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.init_pid, signal.SIGKILL)
        if not self.sandboxed:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.init_pid, signal.SIGKILL)
        os.waitpid(self.init_pid, 0)
        for fd in (self.status_r, self.request_w, self.hello_w, *self.staged.values()):
            os.close(fd)
        for io in self.ranks:
            for read_end, write_end in io.fds.values():
                os.close(read_end)
                os.close(write_end)

    def execute(
        self,
        request: dict[str, Any],
        budget: RunBudget,
        send: Send,
        deadline: float,
        backend: str = "gloo",
    ) -> dict[str, Any]:
        """Hand the request to init, pump output until the ranks end or a limit hits, judge."""
        self.budget = budget
        self.code = str(request["code"])
        nproc = int(request["nproc"])
        launcher = request.get("launcher", "torchrun")
        processes = 1 if launcher == "python" else nproc
        for io in self.ranks[processes:]:
            for read_end, write_end in io.fds.values():
                os.close(read_end)
                os.close(write_end)
        self.ranks = self.ranks[:processes]
        if self.parents:
            parents = [self.parents[index % len(self.parents)] for index in range(processes)]
        else:
            available = [i for i, path in enumerate(self.sibling_paths) if os.path.exists(path)]
            parents = siblings.choose_parents(processes, available)
        order = {
            "code": request["code"],
            "nproc": nproc,
            "port": self.port,
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
        cgroups = self.cgroups
        self.oom_before = cgroups.oom_kills() if cgroups is not None else 0
        try:
            _write_all(self.request_w, json.dumps(order).encode())
        except OSError:
            pass  # init died while waiting: its status pipe says why, or the run ends killed
        finally:
            os.close(self.request_w)
        try:
            self._start_sibling_ranks(order, parents, deadline)
            self._pump(send, deadline)
        finally:
            self._kill()
            os.waitpid(self.init_pid, 0)
            self._drain(send)
            self.memory_exceeded |= self._oom_killed()
        if self.setup_error is not None:
            return {"status": RunStatus.REJECTED, "message": f"sandbox setup: {self.setup_error}"}
        return self._outcome()

    def _init_main(self) -> NoReturn:
        """Become the run's init: isolate, wait for the request, fork the ranks, report, exit."""
        try:
            os.close(self.status_r)
            os.close(self.request_w)
            os.close(self.hello_w)
            for io in self.ranks:
                for read_end, _ in io.fds.values():
                    os.close(read_end)
            # A session (and process group) of the run's own, with no controlling terminal:
            # kill(0, ...) in a rank reaches only this run (a pid namespace does not bound a
            # process-group signal), and no rank can reach the terminal the executor was
            # started from (TIOCSTI into the operator's shell). Trusted runs rely on it too:
            # the deadline kills this process group.
            os.setsid()
            if self.plan is not None:
                sandbox.die_with_parent()  # init's death takes the whole pid namespace with it
                limits = self.ctx.limits
                shm = shm_bytes(limits, gpu=bool(self.gpus))
                sandbox.isolate_init(self.plan, limits.tmp_bytes, shm)
                os.write(self.status_w, b'{"isolated": true}\n')  # siblings may enter now
        except BaseException as error:
            os.write(self.status_w, (json.dumps({"setup_error": str(error)}) + "\n").encode())
            os._exit(70)
        # Before the request: a stop that comes early must not be lost (init is pid 1 of its
        # namespace, which ignores a signal it has no handler for).
        signal.signal(STOP_SIGNAL, self._on_stop)
        signal.signal(DUMP_REQUEST_SIGNAL, self._on_dump_request)
        signal.signal(LOOK_REQUEST_SIGNAL, self._on_look_request)
        store_channel = self._fork_agent_store()
        self.store_pid = store_channel[0]
        with os.fdopen(self.request_r, "rb") as source:
            payload = source.read()
        if not payload:
            os._exit(0)  # the slot went away before sending a request
        order = json.loads(payload)
        launcher = order.get("launcher", "torchrun")
        held = len(self.gpus)  # as order["gpu_count"] tells the siblings
        budget = run_budget(budget_ranks(order["nproc"], launcher), order["timeout_s"],
                            self.ctx.limits, order["backend"], held)  # fmt: skip
        script = _write_script(order["code"], sandboxed=self.plan is not None)
        # `python snippet.py` has no launcher's store: closing the channel ends it unstarted.
        store = (
            self._start_agent_store(*store_channel, budget, order["timeout_s"])
            if launcher == "torchrun"
            else None
        )
        store_channel[1].close()
        os.write(self.status_w, b'{"started": true}\n')  # siblings may start their ranks now
        pids: dict[int, int] = {}
        for rank in order["local"]:
            io = self.ranks[rank]
            pid = os.fork()
            if pid == 0:
                os.close(self.hello_r)
                signal.signal(STOP_SIGNAL, signal.SIG_DFL)  # init's, not the snippet's
                signal.signal(DUMP_REQUEST_SIGNAL, signal.SIG_DFL)
                signal.signal(LOOK_REQUEST_SIGNAL, signal.SIG_DFL)
                if self.plan is not None:
                    # A session of its own, as torchrun starts each worker: kill(0, ...) in a
                    # rank reaches its own process tree only, and the SIGTERM stop reaches the
                    # rank's children too. (Trusted ranks stay in init's group, which the
                    # deadline kills; sandboxed ones die with the pid namespace.)
                    os.setsid()
                rank_module.run_rank(
                    rank_module.RankLaunch(
                        code=order["code"],
                        script=script,
                        rank=io.rank,
                        nproc=order["nproc"],
                        master_port=order["port"],
                        run_id=order["run_id"],
                        launcher=launcher,
                        environment=order["environment"],
                        reseed=self.ctx.reseed,
                        stdout_fd=io.fds["stdout"][1],
                        stderr_fd=io.fds["stderr"][1],
                        result_fd=io.fds["result"][1],
                        stack_fd=io.fds["stack"][1],
                        budget=budget,
                        plan=self.plan,
                        exception_chars=self.ctx.limits.exception_message_chars,
                        delay_s=rank_module.delay_of(order, io.rank),
                    )
                )
            pids[pid] = io.rank
        for io in self.ranks:
            for _, write_end in io.fds.values():
                os.close(write_end)
        self._reap_ranks(pids, set(range(order["processes"])))
        if store is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(store, signal.SIGKILL)
        if self.plan is None:
            shutil.rmtree(os.path.dirname(script), ignore_errors=True)
            os.killpg(0, signal.SIGKILL)  # trusted: stragglers in the group die (setsid escapes)
        os._exit(0)

    def _reap_ranks(self, pids: dict[int, int], expected: set[int]) -> None:
        """Report each rank's exit: init's own children, and siblings' ranks as they tell it."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake select on a child's exit
        signal.set_wakeup_fd(wake_w)
        buffer = b""
        watching = [self.hello_r, wake_r]
        remote: dict[int, int] = {}  # siblings' ranks still running: pid in the cell -> rank
        look: hangstop.Look | None = None  # a look for verify's early stop, under way
        while expected:
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
            if self.hello_r in select.select(watching, [], [], wait_s)[0]:
                data = os.read(self.hello_r, READ_CHUNK)
                if not data:
                    watching.remove(self.hello_r)
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
                        os.write(self.status_w, (json.dumps(ended) + "\n").encode())
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

    def _answer_look(self, look: hangstop.Look, running: dict[int, int], waiting: int) -> None:
        """Tell the slot what the look found; if every rank was blocked, have them dump their
        stacks (after the answer: the slot reads the dumps that follow it)."""
        answer = look.finish(running, waiting, {self.store_pid, *running})
        os.write(self.status_w, (json.dumps({"look": answer}) + "\n").encode())
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
        report = {"cpu": cpu, "sample_ms": int(stacks.SAMPLE_S * 1000)}
        os.write(self.status_w, (json.dumps(report) + "\n").encode())

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
        os.write(self.status_w, (json.dumps({"rank": rank, "wait": code}) + "\n").encode())
        return rank

    def _start_sibling_ranks(
        self, order: dict[str, Any], parents: list[int | None], deadline: float
    ) -> None:
        """Once init has the script and the store up, have siblings start the other ranks."""
        remote = [(rank, parent) for rank, parent in enumerate(parents) if parent is not None]
        try:
            if remote:
                self._await_started(deadline)
            for rank, parent in remote:
                if self.setup_error is not None:
                    return
                io = self.ranks[rank]
                fds = {name: write_end for name, (_, write_end) in io.fds.items()}
                request = {
                    **order,
                    "rank": rank,
                    "script": _script_path(sandboxed=True),
                    "budget_ranks": budget_ranks(order["nproc"], order["launcher"]),
                    "uid": self.plan.uid if self.plan is not None else None,  # the slot's own
                }
                request.pop("local", None)
                staged = self.staged.pop(rank, None)
                if staged is not None:
                    try:
                        _write_all(staged, json.dumps(request).encode())
                    finally:
                        os.close(staged)
                    continue
                siblings.request_rank(
                    self.sibling_paths[parent],
                    self.init_pid,
                    {**fds, "hello": self.hello_w},
                    request,
                )
        except (sandbox.SandboxError, OSError) as error:
            self.setup_error = str(error)
        finally:
            for staged in self.staged.values():
                os.close(staged)  # ranks this run does not have: their waiting children end
            self.staged.clear()
            for io in self.ranks:
                for _, write_end in io.fds.values():
                    os.close(write_end)
            os.close(self.hello_w)

    def _stage_sibling_ranks(self) -> None:
        """Draw the ranks' parents and have the siblings among them stage their rank now.

        A sibling's rank costs two forks of a warm parent and the entry into the cell's
        namespaces (10-50 ms each on 2 loaded cores), and the run's slowest rank holds up its
        rendezvous: staged, a sibling's rank waits in the cell for its order, and the run only
        pays for the rank's own fork. Waits until init has built the namespaces (a few ms; the
        slot takes no request meanwhile). A rank that cannot be staged is asked for at run time.
        """
        available = [index for index, path in enumerate(self.sibling_paths) if os.path.exists(path)]
        if not available:
            return
        self.parents = siblings.draw_parents(available)
        try:
            self._await_status(lambda: self.isolated, time.monotonic() + STAGE_TIMEOUT_S)
        except sandbox.SandboxError:
            return  # init failed: the run reports its setup error
        for rank, parent in enumerate(self.parents[: len(self.ranks)]):
            if parent is None or self.setup_error is not None:
                continue
            fds = {name: write_end for name, (_, write_end) in self.ranks[rank].fds.items()}
            with contextlib.suppress(sandbox.SandboxError):
                self.staged[rank] = siblings.stage_rank(
                    self.sibling_paths[parent], self.init_pid, {**fds, "hello": self.hello_w}
                )

    def _await_started(self, deadline: float) -> None:
        self._await_status(lambda: self.started, deadline)

    def _await_status(self, reached: Callable[[], bool], deadline: float) -> None:
        while not reached() and self.setup_error is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.status_r], [], [], remaining)[0]:
                raise sandbox.SandboxError("the run's init did not start in time")
            data = os.read(self.status_r, READ_CHUNK)
            if not data:
                raise sandbox.SandboxError("the run's init ended before starting the ranks")
            self.status_buffer = self._status_lines(self.status_buffer + data)

    def _fork_agent_store(self) -> tuple[int, socket.socket]:
        """Fork the process that will host the run's rendezvous store, while the cell is staged.

        Forking from a warm parent (hundreds of MB mapped) is the dearest step of a run's
        start: 10-50 ms on 2 loaded cores. Until the request comes, the process waits, root
        like init, on a channel it shares with init, for the run's budget (or for the channel
        to close: a run that uses no store).
        """
        here, there = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                here.close()
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                os.dup2(there.fileno(), 3)
                os.closerange(4, 1 << 16)  # nothing of init's (the ranks' pipes) stays open here
                self._host_agent_store(socket.socket(fileno=3))
            finally:
                os._exit(0)
        there.close()
        return pid, here

    def _host_agent_store(self, channel: socket.socket) -> None:
        """Host the rendezvous store on MASTER_PORT, as torchrun's agent does.

        torchrun tells its workers to join the agent's store (TORCHELASTIC_USE_AGENT_STORE), so
        rank 0 does not create one; a snippet that builds its own store on MASTER_PORT fails
        there, and must fail here too. The store runs as the sandbox's unprivileged user.
        """
        payload = channel.makefile("rb").readline()
        if not payload:
            return  # the run does not use a store
        sandbox.confine_rank(self.plan, RunBudget(**json.loads(payload)))
        import torch.distributed as dist

        _store = dist.TCPStore("localhost", self.port, None, True, multi_tenant=True,
                               wait_for_workers=False)  # fmt: skip
        # Keep serving even if init no longer listens: ranks may already be connected, and
        # the pid namespace's end (or init's SIGKILL) is what ends this process.
        with contextlib.suppress(OSError):
            channel.sendall(b"1")
        while True:
            signal.pause()

    def _start_agent_store(
        self, pid: int, channel: socket.socket, budget: RunBudget, timeout_s: float
    ) -> int | None:
        """Have the staged store process start the store with the run's limits; its pid once
        it listens, or None."""
        try:
            channel.sendall(json.dumps(dataclasses.asdict(budget)).encode() + b"\n")
            channel.settimeout(min(AGENT_STORE_START_S, timeout_s))
            return pid if channel.recv(1) == b"1" else None
        except OSError:  # TimeoutError included
            return None

    def _pump(self, send: Send, deadline: float) -> None:
        poller = select.poll()
        sources = self._sources()
        for fd in sources:
            poller.register(fd, select.POLLIN)
        init_fd = os.pidfd_open(self.init_pid)
        poller.register(init_fd, select.POLLIN)
        # The client's socket, where the zygote gave it: its hang-up ends the run (Stop).
        hangup_fd: int | None = getattr(send, "hangup_fd", None)
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
        try:
            while True:
                now = time.monotonic()
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
                    self._stop_ranks()
                    grace_deadline = now + STOP_GRACE_S
                limit = min(deadline, grace_deadline or stop_at or deadline) - now
                if self.watch is not None and stop_at is None:
                    limit = min(limit, max(0.0, self.watch.wake_at(now) - now))
                for fd, _ in poller.poll(max(1, int(limit * 1000))):
                    if fd == init_fd:
                        return
                    if fd == hangup_fd:
                        self.orphaned = True  # nobody will read the rest: stop the ranks
                        return
                    if not self._read_ready(fd, poller, sources, send):
                        continue
                failed = any(code != 0 for code in self.wait_codes.values())
                if failed and stop_at is None:
                    stop_at = time.monotonic() + perturbation_s + MONITOR_INTERVAL_S
                if self.setup_error or self.output_exceeded or self.orphaned:
                    return
                killed = any(code == -signal.SIGKILL for code in self.wait_codes.values())
                if killed and self._oom_killed():
                    self.memory_exceeded = True
                    return
        finally:
            os.close(init_fd)

    def _watch_stuck(self, now: float) -> bool:
        """Verify's early stop (hangstop.py): ask init for a look, read its answer and the
        dumps that follow; True once the looks prove every rank still running stuck."""
        watch = self.watch
        assert watch is not None
        if watch.ask_now(now):
            for io in self.ranks:
                io.stack = b""
            self.capturing = True
            try:
                os.kill(self.init_pid, LOOK_REQUEST_SIGNAL)
            except ProcessLookupError:
                self.watch = None
                return False
            watch.asked(now)
            return False
        answer = watch.answer
        if answer is None:
            if watch.overdue(now):
                self.capturing = False
                watch.settle(None, {}, now)
            return False
        live = [io for io in self.ranks if io.rank not in self.wait_codes]
        if answer["idle"]:
            dumped = all(io.stack for io in live)
            quiet = now - self.stack_at >= stacks.DUMP_QUIET_S
            if not (dumped and quiet) and now < watch.answered_at + stacks.DUMP_WAIT_S:
                return False  # the dumps are still coming
        self.capturing = False
        if not answer["idle"]:
            return watch.settle(None, {}, now)
        cpu = {int(rank): int(ms) for rank, ms in answer["cpu"].items()}
        window_ms = int(answer["window_ms"])
        stuck = {io.rank: self._stuck_in_look(io, cpu.get(io.rank), window_ms) for io in live}
        threads = {io.rank: len(stacks.threads(io.stack)) for io in live}
        if not watch.settle(stuck, threads, now):
            return False
        self.cpu_ms, self.sample_ms = cpu, window_ms  # the last look's, shown with the stacks
        return True

    def _stuck_in_look(self, io: RankIO, cpu_ms: int | None, window_ms: int) -> StuckAt:
        return stacks.stuck_at(io.stack, self.code, rank_module.SNIPPET_NAME, cpu_ms, window_ms)

    def _capture_stacks(self) -> None:
        """At a time-out, before the kill: have init sample and signal the ranks, read the dumps.

        Bounded (stacks.SAMPLE_S + DUMP_WAIT_S at most), and it changes nothing about how the
        run is judged: ranks that end meanwhile were still running at the deadline."""
        wait_codes = dict(self.wait_codes)
        for io in self.ranks:
            io.stack = b""  # what a look of verify's early stop left
        self.cpu_ms, self.sample_ms, self.watch = {}, None, None
        self.capturing = True
        started = time.monotonic()
        cutoff = started + stacks.SAMPLE_S + stacks.DUMP_WAIT_S
        poller = select.poll()
        sources = {fd: s for fd, s in self._sources().items() if s is None or s[1] == "stack"}
        for fd in sources:
            poller.register(fd, select.POLLIN)
        last_data = started
        try:
            os.kill(self.init_pid, DUMP_REQUEST_SIGNAL)
            while (now := time.monotonic()) < cutoff:
                signalled = self.sample_ms is not None  # init has sampled and signalled them
                dumped = all(io.stack for io in self.ranks if io.rank not in wait_codes)
                if signalled and dumped and now - last_data >= stacks.DUMP_QUIET_S:
                    break  # every rank has answered, and the dumps have stopped coming
                for fd, _ in poller.poll(max(1, int(stacks.DUMP_QUIET_S * 1000))):
                    read = self._read_ready(fd, poller, sources, lambda event: None)
                    if read and sources[fd] is not None:  # a dump, not a status line
                        last_data = time.monotonic()
        except (ProcessLookupError, ValueError):
            pass  # init has ended (or sent a line that is not its own): no stacks
        finally:
            self.wait_codes = wait_codes

    def _read_ready(
        self,
        fd: int,
        poller: select.poll,
        sources: dict[int, tuple[RankIO, str] | None],
        send: Send,
    ) -> bool:
        """Read a ready pipe: init's status lines, or a rank's output (passed to `send`).
        False at its end, which is then no longer polled."""
        data = os.read(fd, READ_CHUNK)
        if not data:
            poller.unregister(fd)
            return False
        source = sources[fd]
        if source is None:
            self.status_buffer = self._status_lines(self.status_buffer + data)
        else:
            self._take(source[0], source[1], data, send)
        return True

    def _stop_ranks(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.init_pid, STOP_SIGNAL)

    def _oom_killed(self) -> bool:
        cgroups = self.cgroups
        return cgroups is not None and cgroups.oom_kills() > self.oom_before

    def _sources(self) -> dict[int, tuple[RankIO, str] | None]:
        sources: dict[int, tuple[RankIO, str] | None] = {self.status_r: None}
        for io in self.ranks:
            for name, (read_end, _) in io.fds.items():
                sources[read_end] = (io, name)
        return sources

    def _status_lines(self, buffer: bytes) -> bytes:
        *lines, rest = buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "setup_error" in message:
                self.setup_error = message["setup_error"]
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

    def _take(self, io: RankIO, stream: str, data: bytes, send: Send) -> None:
        if stream == "stack":
            # Drained always (a blocked writer would hang until the deadline), kept only from
            # the request on and capped: what the snippet wrote there before is dropped.
            if self.capturing:
                io.stack = (io.stack + data)[: stacks.DUMP_LIMIT_BYTES]
                self.stack_at = time.monotonic()
            return
        if stream == "result":
            # Kept apart from the output and capped: the snippet can write here too. Past the
            # cap the pipe is still drained (a blocked writer would hang until the deadline).
            limit = records.record_limit(self.ctx.limits.exception_message_chars)
            if io.record_overflowed or len(io.record) + len(data) > limit:
                io.record, io.record_overflowed = b"", True
            else:
                io.record += data
            return
        room = min(
            self.budget.output_bytes_per_rank - io.bytes_seen,
            self.budget.output_bytes_total - self.total_bytes,
        )
        if len(data) > room:
            data = data[: max(room, 0)]
            io.truncated = self.output_exceeded = True
        io.bytes_seen += len(data)
        self.total_bytes += len(data)
        decoder = io.decoders.setdefault(stream, codecs.getincrementaldecoder("utf-8")("replace"))
        text = decoder.decode(data)
        if text:
            io.text[stream].append(text)
            self._send(send, {"event": "output", "rank": io.rank, "stream": stream, "text": text})

    def _send(self, send: Send, event: dict[str, Any]) -> None:
        if self.orphaned:
            return
        try:
            send(event)
        except OSError:
            self.orphaned = True  # the client went away: stop the run, nobody will read it

    def _drain(self, send: Send) -> None:
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
                elif not self.output_exceeded or source[1] == "result":
                    self._take(source[0], source[1], data, send)
            os.close(fd)
        for io in self.ranks:
            for stream, decoder in io.decoders.items():
                tail = decoder.decode(b"", final=True)
                if tail:
                    io.text[stream].append(tail)

    def _kill(self) -> None:
        try:
            if self.sandboxed:
                os.kill(self.init_pid, signal.SIGKILL)  # pid 1 dies: the namespace dies
            else:
                os.killpg(self.init_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:
            os.kill(self.init_pid, signal.SIGKILL)
        if self.cgroups is not None:
            self.cgroups.kill_all_but(siblings.worker_pids(self.sibling_paths))

    def _outcome(self) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        statuses: list[RankStatus] = []
        problems: list[str] = []
        for io in self.ranks:
            # The status and exit code are the kernel's (wait status); the record only adds
            # the exception, once checked (records.py).
            status, exit_code = rank_status(self.wait_codes.get(io.rank), self.timed_out)
            try:
                record = records.parse(io.record, io.rank, self.ctx.limits.exception_message_chars,
                                       io.record_overflowed)  # fmt: skip
            except records.RecordError as error:
                record = None
                # A rank killed mid-write leaves half a record: only one that ended on its own
                # and still sent a bad one tampered with it (whatever it claims, an error).
                if status in (RankStatus.OK, RankStatus.ERROR):
                    problems.append(f"rank {io.rank} wrote a result record on fd 3 that is {error}")
                    status = RankStatus.ERROR
            statuses.append(status)
            results.append(
                {
                    "rank": io.rank,
                    "status": status,
                    "exit_code": exit_code,
                    "stdout": "".join(io.text["stdout"]),
                    "stderr": "".join(io.text["stderr"]),
                    "truncated": io.truncated,
                    "exception": record.exception if record else None,
                    "unseeded_random": bool(record and record.unseeded_random),
                    "stuck": self._stuck(io) if status is RankStatus.TIMEOUT else None,
                }
            )
        run = run_status(
            statuses,
            timed_out=self.timed_out,
            memory_exceeded=self.memory_exceeded,
            output_exceeded=self.output_exceeded,
        )
        outcome: dict[str, Any] = {"status": run, "ranks": results}
        if self.stopped_when_stuck:
            outcome["stopped_when_stuck"] = True
        if problems:
            outcome["message"] = "; ".join(problems)
        return outcome

    def _stuck(self, io: RankIO) -> dict[str, Any]:
        stuck = stacks.stuck_at(io.stack, self.code, rank_module.SNIPPET_NAME,
                                self.cpu_ms.get(io.rank), self.sample_ms)  # fmt: skip
        return stuck.model_dump()


def budget_ranks(nproc: int, launcher: str) -> int:
    """Ranks to size a run's limits for: a python launch also holds its parent process."""
    return nproc + 1 if launcher == "python" else nproc


def _write_script(code: str, sandboxed: bool) -> str:
    """Write the snippet to a real file the ranks can read (and its children re-import)."""
    # Inside the sandbox /tmp is the run's private tmpfs; the file stays root-owned, read-only
    # for the ranks. A trusted run gets a directory of its own, removed when the run ends.
    path = _script_path(sandboxed)
    directory = os.path.dirname(path)
    os.chmod(directory, 0o1777 if sandboxed else 0o755)
    with open(path, "w", encoding="utf-8") as file:
        file.write(code)
    os.chmod(path, 0o644)
    return path


def _script_path(sandboxed: bool) -> str:
    directory = SANDBOX_SCRIPT_DIR if sandboxed else tempfile.mkdtemp(prefix="ranklab-run-")
    return os.path.join(directory, rank_module.SNIPPET_NAME)


def _namespace_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]

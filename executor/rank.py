"""Inside one rank: set up the torchrun environment, run the snippet, record the outcome, _exit.

Runs in a fork of the warm zygote, so torch is already imported; nothing here may return.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import faulthandler
import fcntl
import io
import json
import os
import random
import socket
import sys
import threading
import time
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

from executor import leaving, sandbox, stacks
from executor.limits import RunBudget

SNIPPET_NAME = "snippet.py"
RESULT_FD = 3  # the rank's outcome goes here, one JSON line, before os._exit
GO_FD = 5  # the go pipe, until the rank has waited for it (closed before the snippet)
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
}
# torchrun sets these for every worker of a single-node, single-role job; the parity suite
# (tests/parity) compares the full list with a real torchrun 2.13.
TORCHELASTIC_SIGNALS = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"


@dataclass
class RankLaunch:
    """Everything a rank needs, decided by the run's init before forking (not frozen: the rank
    clears delay_s once it has served it, see run_rank)."""

    code: str
    script: str  # the snippet's real path (a file the rank can read, as torchrun's ranks do)
    rank: int
    nproc: int
    master_port: int
    run_id: str
    launcher: str  # "torchrun" (nproc ranks) or "python" (one process, no torchrun variables)
    environment: dict[str, str]  # the run's own (a GPU run's CUDA_VISIBLE_DEVICES, NCCL's)
    reseed: bool
    stdout_fd: int
    stderr_fd: int
    result_fd: int
    stack_fd: int
    budget: RunBudget
    plan: sandbox.SandboxPlan | None
    exception_chars: int
    # Verify's perturbation (RunRequest.rank_delays_s): wait this long before the snippet and
    # again before the first write to stdout.
    delay_s: float = 0.0
    # The go pipe's read end: the rank waits for its end (init closes it once the store
    # listens) before its snippet; -1: none to wait for.
    go_fd: int = -1


def launch_of(
    order: dict[str, Any],
    rank: int,
    script: str,
    budget: RunBudget,
    streams: dict[str, int],
    go_fd: int,
    plan: sandbox.SandboxPlan | None,
    reseed: bool,
    exception_chars: int,
) -> RankLaunch:
    """Rank `rank`'s launch, from the run's order, its pipes' write ends by stream name
    (wire.STREAMS) and the go pipe, and its parent's settings."""
    return RankLaunch(
        code=order["code"],
        script=script,
        rank=rank,
        nproc=order["nproc"],
        master_port=order["port"],
        run_id=order["run_id"],
        launcher=order.get("launcher", "torchrun"),
        environment=order["environment"],
        reseed=reseed,
        stdout_fd=streams["stdout"],
        stderr_fd=streams["stderr"],
        result_fd=streams["result"],
        stack_fd=streams["stack"],
        go_fd=go_fd,
        budget=budget,
        plan=plan,
        exception_chars=exception_chars,
        delay_s=delay_of(order, rank),
    )


def delay_of(order: dict[str, Any], rank: int) -> float:
    """The delay the run's order asks of this rank (0: none asked)."""
    delays = order.get("rank_delays_s") or []
    return float(delays[rank]) if rank < len(delays) else 0.0


def torchrun_env(
    rank: int, nproc: int, master_port: int, run_id: str, master_addr: str = "localhost"
) -> dict[str, str]:
    """Return the variables torchrun --standalone sets for a single-node rank."""
    error_dir = f"/tmp/torchelastic_{run_id[:8]}/{run_id}/attempt_0/{rank}"
    env = {
        **BASE_ENV,
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "GROUP_RANK": "0",
        "GROUP_WORLD_SIZE": "1",
        "ROLE_NAME": "default",
        "ROLE_RANK": str(rank),
        "WORLD_SIZE": str(nproc),
        "LOCAL_WORLD_SIZE": str(nproc),
        "ROLE_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "TORCHELASTIC_ERROR_FILE": f"{error_dir}/error.json",
        "TORCHELASTIC_SIGNALS_TO_HANDLE": TORCHELASTIC_SIGNALS,
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }
    # torchrun sets OMP_NUM_THREADS=1 only when it starts more than one worker.
    if nproc > 1:
        env["OMP_NUM_THREADS"] = "1"
    return env


@dataclass(frozen=True)
class Prepared:
    """What a rank did before its order came (prepare): the generators' state it left."""

    random_before: tuple[Any, ...] | None
    confined: bool = False  # sandbox.prepare_confinement's part is done


def prepare(reseed: bool, sandboxed: bool, plan: sandbox.SandboxPlan | None = None) -> Prepared:
    """What a rank does that its order does not decide: done by a staged rank while it waits
    for the order (off the run's path: some 2-3 ms a rank), else just before run_rank. With
    `plan`, its confinement's first part too (sandbox.prepare_confinement)."""
    confined = sandbox.prepare_confinement(plan)
    if reseed:
        reseed_generators()
    os.environ.clear()  # nothing of the zygote's environment reaches the snippet
    # Where the rank is, on request at the deadline (stacks.py): written from the signal
    # handler in C, so a rank blocked inside a collective still answers. (The descriptor is
    # the stack pipe once run_rank has redirected it.)
    with contextlib.suppress(Exception):
        faulthandler.register(stacks.DUMP_SIGNAL, file=stacks.STACK_FD, all_threads=True)
    # Before the snippet can bind dist.destroy_process_group (leaving.py).
    with contextlib.suppress(Exception):
        leaving.wait_before_destroy(sandboxed=sandboxed)
    # Nothing draws from the generators between here and the snippet.
    return Prepared(random_state(), confined)


def run_rank(launch: RankLaunch, prepared: Prepared | None = None) -> NoReturn:
    """Become rank `launch.rank`: confine, run the snippet, write the outcome, _exit."""
    try:
        if prepared is None:
            prepared = prepare(launch.reseed, sandboxed=launch.plan is not None)
        _redirect(launch)
        sandbox.confine_rank(launch.plan, launch.budget, prepared.confined)
        os.chdir(os.path.dirname(launch.script))
        if launch.launcher == "torchrun":
            # torchrun's agent gives socket.getfqdn() of its machine (rendezvous/api.py): a
            # sandboxed run is a machine of its own (hostname ranklab, loopback only) whose name
            # is "localhost"; a trusted run shares the host's.
            address = "localhost" if launch.plan is not None else socket.getfqdn()
            os.environ.update(
                torchrun_env(launch.rank, launch.nproc, launch.master_port, launch.run_id, address)
            )
            error_file = os.environ["TORCHELASTIC_ERROR_FILE"]
            os.makedirs(os.path.dirname(error_file), exist_ok=True)
        else:
            os.environ.update(BASE_ENV)
        # Before the snippet can touch CUDA: the CUDA runtime reads CUDA_VISIBLE_DEVICES once,
        # when it starts, and the warm parent this rank was forked from never started it.
        os.environ.update(launch.environment)
        _set_thread_count(launch)
        # As for `torchrun /abs/path/snippet.py` (and `python /abs/path/snippet.py`): argv[0]
        # is the script's path as launched, which is __file__.
        sys.argv = [launch.script]
        sys.path[0] = os.path.dirname(launch.script)
    except BaseException as error:  # refuse to run rather than run unconfined
        os.write(2, f"ranklab: rank setup failed: {error!r}\n".encode())
        os._exit(70)
    if launch.go_fd >= 0:
        _await_go()
    if launch.delay_s > 0:
        # Drawn by verify, not here: the snippet's generators stay as a fresh process has them.
        time.sleep(launch.delay_s)
        _first_write.arm(launch.delay_s)
        # The launch is reachable from the snippet (its caller's frames, gc): once served, a
        # perturbed rank's launch reads as an unperturbed one's.
        launch.delay_s = 0.0
    # Best effort: an exception escaping run_rank would run init's code on in this process.
    with contextlib.suppress(Exception):
        forget_perturbation()
    before = prepared.random_before
    exit_code, exception = _execute(launch.code, launch.script, launch.exception_chars)
    exit_code &= 0xFF  # what the shell would see, as for `python snippet.py`
    # As the interpreter does at exit: wait for the snippet's non-daemon threads (one that
    # never ends hangs the rank until the deadline, as it would hang `python snippet.py`), then
    # run the atexit handlers. Module teardown is skipped: see os._exit below.
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    record = {
        "rank": launch.rank,
        "exit_code": exit_code,
        "exception": exception,
        "unseeded_random": before is not None and unseeded_draws(before),
    }
    with contextlib.suppress(OSError):
        os.write(RESULT_FD, (json.dumps(record) + "\n").encode())
    # As a torchrun worker's slower exit does in practice: a peer still connecting its mesh
    # to this rank must not find the connection closed (leaving.py).
    leaving.leave(sandboxed=launch.plan is not None)
    # os._exit, not sys.exit: tearing down gloo threads in a forked rank deadlocks (trap 4).
    os._exit(exit_code)


def _await_go() -> None:
    """Wait until init closes the go pipe (the store listens, the snippet is written); the
    snippet never sees the descriptor."""
    with contextlib.suppress(OSError):
        while os.read(GO_FD, 64):
            pass
    with contextlib.suppress(OSError):
        os.close(GO_FD)


def forget_perturbation() -> None:
    """Clear, in this rank's own copy of the memory it was forked with, the run's order as the
    snippet could find it (gc.get_objects(): the order's dict in init's frames), so that a
    perturbed run's (rank_delays_s) reads as an unperturbed one's. Its parents' copies are
    untouched. The order's raw JSON bytes in a parent's frame are out of reach here (bytes
    cannot be cleared): its reader must drop them before forking the rank."""
    import gc

    for thing in gc.get_objects():
        if isinstance(thing, dict) and "rank_delays_s" in thing:
            thing["rank_delays_s"] = []


def reseed_generators() -> None:
    """Seed every generator a fresh interpreter seeds from entropy, as a fresh process would.

    A fork inherits its parent's generator states, so without this an unseeded torch.rand,
    random.random() or nn.Linear initialisation would be identical on every rank and run.
    CUDA's generators are not touched: the warm parent never initialised CUDA, so they start
    in a fork exactly as in a fresh process.
    """
    import torch

    torch.default_generator.seed()
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def random_state() -> tuple[Any, ...] | None:
    """Snapshot the default generators, to tell afterwards whether the snippet drew from them."""
    torch = sys.modules.get("torch")
    numpy = sys.modules.get("numpy")
    if torch is None:
        return None
    legacy = numpy.random.get_state()[1].copy() if numpy is not None else None
    return (torch.initial_seed(), torch.get_rng_state(), random.getstate(), legacy)


def unseeded_draws(before: tuple[Any, ...]) -> bool:
    """Whether the snippet drew from a generator it never seeded (its output may vary by run)."""
    import torch

    seed, torch_state, python_state, legacy = before
    if torch.initial_seed() == seed and not torch.equal(torch.get_rng_state(), torch_state):
        return True
    # random and numpy cannot tell seeding from drawing: a change means "may vary", which
    # only makes `ranklab verify` look harder (more runs) before it accepts fixed output.
    if random.getstate() != python_state:
        return True
    numpy = sys.modules.get("numpy")
    return (
        legacy is not None
        and numpy is not None
        and (not (numpy.random.get_state()[1] == legacy).all())
    )


def _set_thread_count(launch: RankLaunch) -> None:
    # OMP_NUM_THREADS set now is read by nobody (trap 3): a fresh torchrun worker reads it at
    # torch import. Apply what that worker would end up with.
    import torch

    threads = os.environ.get("OMP_NUM_THREADS")
    torch.set_num_threads(int(threads) if threads else _fresh_default_threads())


def _fresh_default_threads() -> int:
    # What torch picks in a fresh process with no OMP_NUM_THREADS: the physical cores it may use.
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except OSError:
        return 1


def _redirect(launch: RankLaunch) -> None:
    go = fcntl.fcntl(launch.go_fd, fcntl.F_DUPFD, GO_FD + 1) if launch.go_fd >= 0 else -1
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(launch.stdout_fd, 1)
    os.dup2(launch.stderr_fd, 2)
    os.dup2(launch.result_fd, RESULT_FD)
    os.dup2(launch.stack_fd, stacks.STACK_FD)
    # Close every other inherited descriptor: the zygote's listening socket and the
    # slot worker's connection to the service must be out of the snippet's reach.
    if go >= 0:
        os.dup2(go, GO_FD)
        os.closerange(GO_FD + 1, 1 << 16)
    else:
        os.closerange(stacks.STACK_FD + 1, 1 << 16)
    sys.stdin = _Stream(io.FileIO(0, "r", closefd=False))
    unbuffered = launch.launcher == "torchrun"
    sys.stdout = _text_stream(1, "strict", unbuffered)
    sys.stderr = _text_stream(2, "backslashreplace", unbuffered)


class _FirstWrite:
    """Verify's delay before a rank's first write to stdout (armed by run_rank), held in a slot
    of one object whose name and type are the same in every run, not on the stream (whatever a
    snippet can see of its streams is the same with and without rank_delays_s) nor as a plain
    module value (sys.modules["executor.rank"] read [1.0] or [0.0] before a first print).

    Not a secret: the slot is still in the rank's memory, so a snippet that looks for it (or
    walks gc.get_objects()) reads it before its first write. Only a gate held outside the
    rank would hide it: see docs/executor.md, "Verify's perturbation"."""

    __slots__ = ("_seconds",)

    def __init__(self) -> None:
        self._seconds = 0.0

    def arm(self, seconds: float) -> None:
        """Wait `seconds` before the next first write to stdout."""
        self._seconds = seconds

    def wait(self) -> None:
        """Serve the armed delay, once."""
        seconds, self._seconds = self._seconds, 0.0
        if seconds:
            time.sleep(seconds)


_first_write = _FirstWrite()


class _Stream(io.TextIOWrapper):
    """Every run's stdin, stdout and stderr: a text stream that waits verify's delay before the
    first write to stdout (the order in which ranks first print then follows the delays, unless
    the snippet itself orders it). Named as the interpreter's own streams' type is."""

    def write(self, text: str) -> int:
        if _first_write._seconds and text and self.fileno() == 1:
            _first_write.wait()
        return super().write(text)


_Stream.__module__, _Stream.__name__, _Stream.__qualname__ = "_io", "TextIOWrapper", "TextIOWrapper"


def _text_stream(fd: int, errors: str, unbuffered: bool) -> io.TextIOWrapper:
    # Under torchrun as `python -u` (how torchrun starts its workers): every write reaches the
    # pipe at once, so output printed just before a crash or a kill is kept. A plain `python
    # snippet.py` is line-buffered here, as in a terminal, so that output still streams live.
    # Python's own error handlers: strict for stdout, backslashreplace for stderr.
    raw = io.FileIO(fd, "w", closefd=False)
    return _Stream(
        raw, encoding="utf-8", errors=errors, write_through=unbuffered, line_buffering=True
    )


def _execute(code: str, script: str, exception_chars: int) -> tuple[int, dict[str, Any] | None]:
    """Run code as __main__ the way `python snippet.py` would; return (exit code, exception)."""
    module = types.ModuleType("__main__")
    module.__dict__.update({"__file__": script, "__builtins__": builtins, "__cached__": None})
    sys.modules["__main__"] = module
    _stacks_start_at_the_snippet(script)
    try:
        exec(compile(code, script, "exec"), module.__dict__)
    except SystemExit as stop:
        return _exit_code_of(stop), None
    except BaseException as error:
        tb = leaving.hide_wrapper(error.__traceback__.tb_next if error.__traceback__ else None)
        # The harness's own frame (this exec) is no frame of the learner's: the traceback starts
        # at the snippet's <module>, as `python snippet.py` shows it. The default hook prints the
        # exception's own __traceback__ (not its tb argument), so it is cut there.
        error.__traceback__ = tb
        # Through sys.excepthook, as the interpreter does: init_process_group installs one that
        # prefixes every line with "[rankN]: ".
        sys.excepthook(type(error), error, tb)
        return 1, describe_exception(error, exception_chars)
    return 0, None


def _stacks_start_at_the_snippet(script: str) -> None:
    """Make traceback's stack walks (print_stack, format_stack, extract_stack, logging's
    stack_info) end at the snippet's <module>, as under `python snippet.py`: the harness frames
    below it (this module, the zygote's) are no frames of the learner's. An uncaught exception's
    traceback is cut in _execute; these walks follow f_back, which cannot be cut, so the walk
    stops there. Only this rank's process is changed, and only what it prints."""
    walk = traceback.walk_stack

    def walk_stack(f: types.FrameType | None) -> Iterator[tuple[types.FrameType, int]]:
        if f is None:  # as traceback.walk_stack finds its caller's caller, from here
            f = sys._getframe().f_back.f_back.f_back.f_back  # type: ignore[union-attr]
        for found, line in walk(f):
            yield found, line
            if found.f_code.co_filename == script and found.f_code.co_name == "<module>":
                return

    traceback.walk_stack = walk_stack


def describe_exception(error: BaseException, exception_chars: int) -> dict[str, Any]:
    """The exception as the contract reports it, with its base classes for hierarchy matching."""
    kind = type(error)
    return {
        "type": kind.__name__,
        "module": kind.__module__,
        "bases": [base.__name__ for base in kind.__mro__[1:] if base is not object],
        "message": str(error)[:exception_chars],
    }


def _exit_code_of(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1

"""Inside one rank: set up the torchrun environment, run the snippet, record the outcome, _exit.

Runs in a fork of the warm zygote, so torch is already imported; nothing here may return.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import linecache
import os
import sys
import threading
import traceback
import types
from dataclasses import dataclass
from typing import NoReturn

from executor import sandbox
from executor.limits import RunBudget

SNIPPET_FILENAME = "snippet.py"
RESULT_FD = 3  # the rank's outcome goes here, one JSON line, before os._exit
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONUNBUFFERED": "1",
}


@dataclass(frozen=True)
class RankLaunch:
    """Everything a rank needs, decided by the slot before forking."""

    code: str
    rank: int
    nproc: int
    master_port: int
    stdout_fd: int
    stderr_fd: int
    result_fd: int
    budget: RunBudget
    plan: sandbox.SandboxPlan | None
    exception_chars: int


def torchrun_env(rank: int, nproc: int, master_port: int) -> dict[str, str]:
    """Return the variables torchrun --standalone sets for a single-node rank."""
    return {
        **BASE_ENV,
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "GROUP_RANK": "0",
        "ROLE_RANK": str(rank),
        "WORLD_SIZE": str(nproc),
        "LOCAL_WORLD_SIZE": str(nproc),
        "ROLE_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(master_port),
        "TORCHELASTIC_RUN_ID": "ranklab",
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
    }


def run_rank(launch: RankLaunch) -> NoReturn:
    """Become rank `launch.rank`: confine, run the snippet, write the outcome, _exit."""
    try:
        _redirect(launch)
        sandbox.confine_rank(launch.plan, launch.budget)
        os.chdir("/tmp")
        os.environ.clear()  # nothing of the zygote's environment reaches the snippet
        os.environ.update(torchrun_env(launch.rank, launch.nproc, launch.master_port))
        sys.argv = [SNIPPET_FILENAME]
    except BaseException as error:  # refuse to run rather than run unconfined
        os.write(2, f"ranklab: rank setup failed: {error!r}\n".encode())
        os._exit(70)
    exit_code, exception = _execute(launch.code, launch.exception_chars)
    exit_code &= 0xFF  # what the shell would see, as for `python snippet.py`
    # Like the interpreter at exit, wait for the snippet's non-daemon threads (a thread that
    # never ends hangs the rank until the deadline, as it would hang `python snippet.py`).
    # Unlike it, skip atexit handlers and module teardown: see os._exit below.
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    record = {"rank": launch.rank, "exit_code": exit_code, "exception": exception}
    with contextlib.suppress(OSError):
        os.write(RESULT_FD, (json.dumps(record) + "\n").encode())
    # os._exit, not sys.exit: tearing down gloo threads in a forked rank deadlocks (trap 4).
    os._exit(exit_code)


def _redirect(launch: RankLaunch) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(launch.stdout_fd, 1)
    os.dup2(launch.stderr_fd, 2)
    os.dup2(launch.result_fd, RESULT_FD)
    # Close every other inherited descriptor: the zygote's listening socket and the
    # slot worker's connection to the service must be out of the snippet's reach.
    os.closerange(RESULT_FD + 1, 1 << 16)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    # Line-buffered so that output streams to the learner as ranks print it.
    sys.stdout = _text_stream(1)
    sys.stderr = _text_stream(2)


def _text_stream(fd: int) -> io.TextIOWrapper:
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", line_buffering=True)


def _execute(code: str, exception_chars: int) -> tuple[int, dict[str, str] | None]:
    """Run code as __main__ the way `python snippet.py` would; return (exit code, exception)."""
    module = types.ModuleType("__main__")
    module.__dict__.update({"__file__": SNIPPET_FILENAME, "__builtins__": builtins})
    sys.modules["__main__"] = module
    # Tracebacks show the snippet's source lines, as they would for a real file.
    linecache.cache[SNIPPET_FILENAME] = (
        len(code),
        None,
        code.splitlines(keepends=True),
        SNIPPET_FILENAME,
    )
    try:
        exec(compile(code, SNIPPET_FILENAME, "exec"), module.__dict__)
    except SystemExit as stop:
        return _exit_code_of(stop), None
    except BaseException as error:
        tb = error.__traceback__.tb_next if error.__traceback__ else None
        traceback.print_exception(type(error), error, tb)
        message = str(error)[:exception_chars]
        return 1, {"type": type(error).__name__, "message": message}
    return 0, None


def _exit_code_of(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1

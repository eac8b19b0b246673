"""Launch a snippet the reference way (real `torchrun`, or plain `python snippet.py`) and read back
what each rank did, in the same shape as the executor's RunResult.

torchrun 2.13 (`--redirects 3 --log-dir`) writes each rank's stdout/stderr to
`LOG_DIR/<run id>/attempt_0/<rank>/std{out,err}.log`. How each rank ended comes from torchrun's
own stderr: its failure summary lists every rank that ended non-zero (`rank : 1 (local_rank: 1)`
/ `exitcode : -9 (pid: 123)`), ranks it stopped after a failure are named in `Sending process
PID closing signal SIGTERM`, and ranks absent from both ended with 0. A rank still alive at the
harness's deadline hangs: the harness notes it (from /proc), then sends torchrun SIGTERM, as
Ctrl-C would, and kills whatever is left.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from executor.contract import RankResult, RunResult

VENV_BIN = Path(sys.executable).parent
TORCHRUN = VENV_BIN / "torchrun"
# What each reference launch starts from: a small fixed environment, so that "what torchrun
# adds" is everything a rank sees beyond it.
LAUNCH_ENV_NAMES = ("PATH", "HOME", "LANG")
# torch 2.13's gloo teardown sometimes aborts a cold rank at exit, after it has printed all it
# had to (EXECUTOR-NOTES trap 4; 10-15% of launches here). It says nothing about the snippet, and
# the executor deliberately ends ranks with os._exit instead: such a launch is repeated.
TEARDOWN_ABORT = "terminate called without an active exception"
SHUTDOWN_S = 15.0  # after SIGTERM at the deadline, torchrun gets this long to stop its workers
POLL_S = 0.2

SUMMARY_ENTRY = re.compile(
    r"rank\s*:\s*(?P<rank>\d+) \(local_rank: \d+\)\s*\n"
    r"\s*exitcode\s*:\s*(?P<code>-?\d+) \(pid: (?P<pid>\d+)\)"
)
CLOSING = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>\w+)")
RANK_PREFIX = re.compile(r"^\[rank\d+\]: ")


@dataclass
class RankRun:
    """How one rank (or the one process, for `python snippet.py`) ended, and what it printed.

    status: "ok", "exit N" (ended by itself with N and no exception), "raises NAME",
    "killed SIGNAME" (a signal it did not get from its launcher), "stopped" (its launcher ended
    it because a peer failed) or "hangs" (still running at the deadline).
    """

    rank: int
    status: str
    stdout: str
    stderr: str
    exit_code: int | None = None


@dataclass
class Observed:
    """One launch of one snippet."""

    launcher: str
    ranks: list[RankRun]
    wall_s: float
    launch_env: dict[str, str] = field(default_factory=dict)
    log: str = ""  # the launcher's own stderr (torchrun's warnings and failure summary)
    discarded: int = 0  # earlier launches thrown away because a rank aborted at teardown

    @property
    def aborted_at_teardown(self) -> bool:
        """Whether some rank died of torch's teardown abort (see TEARDOWN_ABORT)."""
        return any(
            rank.status == "killed SIGABRT" and TEARDOWN_ABORT in rank.stderr for rank in self.ranks
        )


def launch_env(home: str) -> dict[str, str]:
    """The environment every reference launch starts from."""
    return {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}


def signal_name(number: int) -> str:
    """SIGKILL for 9, and so on."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exception_line(stderr: str) -> str | None:
    """The last line of the last traceback in stderr (`NAME: message`), as printed."""
    lines = stderr.splitlines()
    bare = [RANK_PREFIX.sub("", line) for line in lines]
    starts = [i for i, line in enumerate(bare) if line.startswith("Traceback (most recent call")]
    if not starts:
        return None
    for index in range(starts[-1] + 1, len(lines)):
        if bare[index] and not bare[index][0].isspace():
            return lines[index]
    return None


def exception_name(stderr: str) -> str | None:
    """The class name of the exception whose traceback ends stderr (no module prefix)."""
    line = exception_line(stderr)
    if line is None:
        return None
    match = re.match(r"([A-Za-z_][\w.]*)(?::|$)", RANK_PREFIX.sub("", line))
    return match.group(1).rsplit(".", 1)[-1] if match else None


def status_of_exit(code: int, stderr: str) -> str:
    """Judge a process that ended by itself from its exit code and what it printed."""
    if code == 0:
        return "ok"
    if code < 0:
        return f"killed {signal_name(-code)}"
    name = exception_name(stderr) if code == 1 else None
    return f"raises {name}" if name else f"exit {code}"


def run_torchrun(source: str, nproc: int, deadline_s: float) -> Observed:
    """Run `torchrun --standalone --nproc_per_node=N /its/folder/snippet.py` for real."""
    with tempfile.TemporaryDirectory(prefix="ranklab-parity-") as tmp:
        Path(tmp, "snippet.py").write_text(source)
        logs = Path(tmp, "logs")
        env = launch_env(tmp)
        command = [
            str(TORCHRUN), "--standalone", f"--nproc_per_node={nproc}",
            "--redirects", "3", "--log-dir", str(logs), str(Path(tmp, "snippet.py")),
        ]  # fmt: skip
        started = time.monotonic()
        process = subprocess.Popen(
            command, cwd=tmp, env=env, text=True, start_new_session=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        hung: dict[int, int] = {}  # pid -> rank, for ranks alive at the deadline
        workers: set[int] = set()
        try:
            log, workers, hung = _wait_torchrun(process, started + deadline_s)
        finally:
            _kill_leftovers(process, workers)
        wall = time.monotonic() - started
        ranks = _torchrun_ranks(logs, nproc, log, hung)
        return Observed("torchrun", ranks, wall, env, log)


def _wait_torchrun(
    process: subprocess.Popen[str], deadline: float
) -> tuple[str, set[int], dict[int, int]]:
    """Wait for torchrun; return its stderr, every worker pid seen, and the ranks that hung."""
    workers: set[int] = set()
    while True:
        try:
            timeout = max(0.01, min(POLL_S, deadline - time.monotonic()))
            _, log = process.communicate(timeout=timeout)
            return log, workers, {}
        except subprocess.TimeoutExpired:
            alive = _children(process.pid)
            workers |= set(alive)
            if time.monotonic() >= deadline:
                break
    # The deadline: whoever is still running hangs. Stop torchrun as Ctrl-C would.
    hung = {pid: rank for pid, rank in alive.items() if rank is not None}
    process.send_signal(signal.SIGTERM)
    try:
        _, log = process.communicate(timeout=SHUTDOWN_S)
    except subprocess.TimeoutExpired:
        _kill_leftovers(process, workers)
        _, log = process.communicate()
    return log, workers, hung


def _children(parent: int) -> dict[int, int | None]:
    """The live child processes of parent, with the RANK each was given (None if unreadable)."""
    children: dict[int, int | None] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        ranks = [item[5:] for item in environ if item.startswith(b"RANK=")]
        children[int(entry.name)] = int(ranks[0]) if ranks else None
    return children


def _kill_leftovers(process: subprocess.Popen[str], workers: set[int]) -> None:
    # torchrun starts each worker in its own session: kill each worker's group, then torchrun's.
    for group in [*workers, process.pid]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def _torchrun_ranks(logs: Path, nproc: int, log: str, hung: dict[int, int]) -> list[RankRun]:
    exits = {int(m["rank"]): (int(m["code"]), int(m["pid"])) for m in SUMMARY_ENTRY.finditer(log)}
    closed = {int(m["pid"]) for m in CLOSING.finditer(log)}
    hung_ranks = set(hung.values())
    ranks: list[RankRun] = []
    for rank in range(nproc):
        stdout = _read_log(logs, rank, "stdout")
        stderr = _read_log(logs, rank, "stderr")
        if rank in hung_ranks:
            ranks.append(RankRun(rank, "hangs", stdout, stderr))
            continue
        code, pid = exits.get(rank, (0, None))
        # A rank torchrun sent its closing signal to was stopped, not failed by itself.
        status = "stopped" if pid in closed and code < 0 else status_of_exit(code, stderr)
        ranks.append(RankRun(rank, status, stdout, stderr, code))
    return ranks


def _read_log(logs: Path, rank: int, stream: str) -> str:
    found = sorted(logs.glob(f"*/attempt_0/{rank}/{stream}.log"))
    return found[-1].read_text(errors="backslashreplace") if found else ""


def run_python(source: str, deadline_s: float) -> Observed:
    """Run `python /its/folder/snippet.py` for real: one process, whatever children it starts."""
    with tempfile.TemporaryDirectory(prefix="ranklab-parity-") as tmp:
        Path(tmp, "snippet.py").write_text(source)
        env = launch_env(tmp)
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, str(Path(tmp, "snippet.py"))], cwd=tmp, env=env, text=True,
            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            stdout, stderr = process.communicate(timeout=deadline_s)
            rank = RankRun(0, status_of_exit(process.returncode, stderr), stdout, stderr)
            rank.exit_code = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            rank = RankRun(0, "hangs", stdout, stderr)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # children it left behind
        return Observed("python", [rank], time.monotonic() - started, env)


def _failed_by_itself(rank: RankResult) -> bool:
    if rank.status == "error":
        return True
    return rank.status == "killed" and rank.exit_code not in (None, -signal.SIGTERM)


def from_executor(result: RunResult, launcher: str = "executor") -> Observed:
    """The executor's RunResult in the same shape as a reference launch."""
    ranks: list[RankRun] = []
    for rank in result.ranks:
        if rank.status == "ok":
            status = "ok"
        elif rank.status == "timeout":
            status = "hangs"
        elif rank.status == "killed":
            # The executor stops the survivors of a failure as torchrun does: SIGTERM (-15),
            # then, after the grace, a kill that leaves no exit code. Otherwise a signal the
            # rank did not get from its launcher ended it.
            code = rank.exit_code
            peer_failed = any(_failed_by_itself(other) for other in result.ranks if other != rank)
            if code is None or (code == -signal.SIGTERM and peer_failed):
                status = "stopped"
            else:
                status = f"killed {signal_name(-code)}"
        elif rank.exception is not None:
            status = f"raises {rank.exception.type}"
        else:
            status = f"exit {rank.exit_code}"
        ranks.append(RankRun(rank.rank, status, rank.stdout, rank.stderr, rank.exit_code))
    wall = result.duration_ms / 1000
    return Observed(launcher, ranks, wall, log=f"{result.status}: {result.message or ''}")

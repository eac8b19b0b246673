"""attack: the operator started `ranklab run`, `ranklab executor serve` or `ranklab agent`
from an interactive shell; a snippet opens /dev/tty, or uses fds 0-2, and pushes a command into
the terminal's input with ioctl(TIOCSTI). Where the kernel still allows TIOCSTI
(dev.tty.legacy_tiocsti = 1) the shell then runs that command as root once the executor returns.
expect: ok, with every attempt failing: the sandbox has no /dev/tty, the run has no controlling
terminal (a session of its own, as have the warm parents, and the command gave its terminal
up), fds 0-2 are not terminals, and nothing reaches the terminal's input."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import termios
import threading
import time
import tty
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from executor.ports import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.executor

SNIPPET = """
import fcntl, json, os, termios
report = {}
try:
    descriptors = {"tty": os.open("/dev/tty", os.O_RDWR)}
    report["open"] = "opened"
except OSError as error:
    descriptors = {}
    report["open"] = type(error).__name__
descriptors.update({"fd0": 0, "fd1": 1, "fd2": 2})
for name, fd in descriptors.items():
    try:
        for byte in b"echo INJECTED > /dev/null\\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))
        report[name] = "injected"
    except OSError as error:
        report[name] = error.errno
print(json.dumps(report))
"""
RANKLAB = str(Path(sys.executable).with_name("ranklab"))
# An interactive shell's job: the shell leads the session that owns the terminal and starts the
# command as its child, which has the terminal as its controlling terminal too.
SHELL_JOB = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


# What the processes wrote to each terminal (their stderr), kept to be shown when a test fails.
_SCREENS: dict[int, bytearray] = {}


def _watch(controller: int, screen: bytearray, stop: threading.Event) -> None:
    """Read what is written to the terminal, as its window would: a writer never waits on a full
    buffer, and reading the controller side leaves the terminal's input queue alone."""
    while not stop.is_set():
        if select.select([controller], [], [], 0.1)[0]:
            try:
                screen += os.read(controller, 65536)
            except OSError:  # EIO: nothing holds the terminal any more
                return


@pytest.fixture
def terminal() -> Iterator[int]:
    """A pseudo-terminal in raw mode: what is pushed into its input stays there to be read."""
    controller, terminal = os.openpty()
    tty.setraw(terminal)
    screen, stop = _SCREENS.setdefault(terminal, bytearray()), threading.Event()
    watcher = threading.Thread(target=_watch, args=(controller, screen, stop), daemon=True)
    watcher.start()
    try:
        yield terminal
    finally:
        stop.set()
        watcher.join(5)
        _SCREENS.pop(terminal, None)
        os.close(controller)
        os.close(terminal)


def _wait_showing(terminal: int, check: Callable[[], bool], what: str) -> None:
    """wait_for, and on a time-out the last of what was written to the terminal."""
    try:
        wait_for(check, 180, what)
    except AssertionError as error:
        screen = bytes(_SCREENS.get(terminal, b""))[-4000:].decode(errors="replace")
        raise AssertionError(f"{error}; its terminal showed:\n{screen}") from None


def _from_shell(terminal: int, command: list[str], **options: Any) -> subprocess.Popen[bytes]:
    def lead_session() -> None:
        os.setsid()
        fcntl.ioctl(terminal, termios.TIOCSCTTY, 0)

    return subprocess.Popen(
        [sys.executable, "-c", SHELL_JOB, *command],
        stdin=terminal,
        stderr=terminal,
        preexec_fn=lead_session,
        **options,
    )


def _pending_input(terminal: int) -> bytes:
    os.set_blocking(terminal, False)
    try:
        return os.read(terminal, 4096)
    except BlockingIOError:
        return b""


def _check_ranks(result: dict[str, Any]) -> None:
    assert result["status"] == "ok", result
    for rank in result["ranks"]:
        report = json.loads(rank["stdout"])
        assert report["open"] == "FileNotFoundError"  # no /dev/tty in the sandbox
        assert "tty" not in report
        # Not a terminal: fd 0 is /dev/null, fds 1 and 2 are the run's pipes.
        assert [report[name] for name in ("fd0", "fd1", "fd2")] == [errno.ENOTTY] * 3


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _tree(root: int) -> list[int]:
    """root and every process descending from it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _holding_the_terminal(shell: int) -> list[str]:
    """The processes under the shell's job that still have a controlling terminal."""
    return [
        f"{pid} {Path(f'/proc/{pid}/cmdline').read_bytes()[:80]!r}"
        for pid in _tree(shell)
        if pid != shell and (fields := _stat(pid)) and fields[4] != "0"  # tty_nr
    ]


def test_a_snippet_cannot_type_into_the_terminal_ranklab_run_was_started_from(
    terminal: int, tmp_path: Path
) -> None:
    snippet = tmp_path / "inject.py"
    snippet.write_text(SNIPPET)
    # Three ranks beside two siblings: one is always forked by the run's own init.
    command = [RANKLAB, "run", str(snippet), "--nproc", "3", "--json"]
    shell = _from_shell(terminal, command, stdout=subprocess.PIPE)
    output, _ = shell.communicate(timeout=240)
    assert _pending_input(terminal) == b""  # nothing was typed into the terminal
    _check_ranks(json.loads(output))


@pytest.fixture
def served(terminal: int) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`ranklab executor serve` started from the terminal's shell, warm."""
    port = free_port()
    command = [RANKLAB, "executor", "serve", "--port", str(port), "--log-level", "warning"]
    shell = _from_shell(terminal, command, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert shell.poll() is None, "executor serve exited"
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        _wait_showing(terminal, healthy, "executor serve to be warm")
        yield shell, url
    finally:
        os.killpg(shell.pid, signal.SIGTERM)  # the shell's job: the shell and the executor
        shell.wait(30)


def test_nothing_of_executor_serve_keeps_the_terminal_nor_can_a_run_type_into_it(
    terminal: int, served: tuple[subprocess.Popen[bytes], str]
) -> None:
    shell, url = served
    # The service, its warm parents and their slot workers: none holds the terminal.
    assert _holding_the_terminal(shell.pid) == []
    body = {"code": SNIPPET, "nproc": 3, "use_cache": False}
    response = httpx.post(f"{url}/v1/runs", json=body, timeout=120)
    assert response.status_code == 200, response.text
    time.sleep(0.2)  # as a shell would read it: after the run
    assert _pending_input(terminal) == b""
    _check_ranks(response.json())


def test_nothing_of_an_agent_keeps_the_terminal(terminal: int, redis_url: str) -> None:
    command = [RANKLAB, "agent", "--queue", redis_url.rsplit("/", 1)[0] + "/12", "--pool", "cpu",
               "--slots", "1", "--name", "attacks-tty"]  # fmt: skip
    shell = _from_shell(terminal, command, stdout=subprocess.DEVNULL)

    def warm_parents() -> bool:
        assert shell.poll() is None, "the agent exited"
        cmdlines = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _tree(shell.pid)]
        return sum(b"executor.zygote" in cmdline for cmdline in cmdlines) >= 3  # main + 2

    try:
        _wait_showing(terminal, warm_parents, "the agent's warm parents")
        assert _holding_the_terminal(shell.pid) == []
    finally:
        os.killpg(shell.pid, signal.SIGTERM)
        shell.wait(30)

"""attack: the operator started `ranklab run` (or the executor, or an agent) from an interactive
shell; a snippet opens /dev/tty, or uses fds 0-2, and pushes a command into the terminal's input
with ioctl(TIOCSTI). Where the kernel still allows TIOCSTI (dev.tty.legacy_tiocsti = 1) the shell
then runs that command as root once the executor returns.
expect: ok, with every attempt failing: the sandbox has no /dev/tty, the run has no controlling
terminal (a session of its own, as have the warm parents), fds 0-2 are not terminals, and
nothing reaches the terminal's input."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import termios
import tty
from collections.abc import Iterator
from pathlib import Path

import pytest

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


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal in raw mode: what is pushed into its input stays there to be read."""
    controller, terminal = os.openpty()
    tty.setraw(terminal)
    yield controller, terminal
    os.close(controller)
    os.close(terminal)


def _take_controlling_terminal(terminal: int) -> None:
    # In the child, before exec: a new session whose controlling terminal is the pty, as for a
    # command started from an interactive shell.
    os.setsid()
    import fcntl

    fcntl.ioctl(terminal, termios.TIOCSCTTY, 0)


def _pending_input(terminal: int) -> bytes:
    os.set_blocking(terminal, False)
    try:
        return os.read(terminal, 4096)
    except BlockingIOError:
        return b""


def test_a_snippet_cannot_type_into_the_terminal_ranklab_run_was_started_from(
    terminal: tuple[int, int], tmp_path: Path
) -> None:
    _, pty = terminal
    snippet = tmp_path / "inject.py"
    snippet.write_text(SNIPPET)
    completed = subprocess.run(
        # Three ranks beside two siblings: one is always forked by the run's own init.
        [RANKLAB, "run", str(snippet), "--nproc", "3", "--json"],
        stdin=pty,
        stdout=subprocess.PIPE,
        stderr=pty,
        preexec_fn=lambda: _take_controlling_terminal(pty),
        timeout=240,
        check=False,
    )
    result = json.loads(completed.stdout)
    assert result["status"] == "ok", result
    assert _pending_input(pty) == b""  # nothing was typed into the terminal
    for rank in result["ranks"]:
        report = json.loads(rank["stdout"])
        assert report["open"] == "FileNotFoundError"  # no /dev/tty in the sandbox
        assert "tty" not in report
        # Not a terminal: fd 0 is /dev/null, fds 1 and 2 are the run's pipes.
        assert [report[name] for name in ("fd0", "fd1", "fd2")] == [errno.ENOTTY] * 3

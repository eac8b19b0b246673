"""The embedded executor: started next to the app by `ranklab serve` and by `ranklab verify`.

The executor is its own process and HTTP service (it owns torch); the app only talks to it over
HTTP. If it cannot start, the app still serves challenges and pages say runs are unavailable.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO
from urllib.parse import urlsplit

import uvicorn

from app.config import Settings
from app.executor_client import HttpExecutorClient
from app.main import create_app

# What the executor may inherit: how to find Python and its own settings, never the app's
# secret key or database URL.
_PASSED_TO_EXECUTOR = ("PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR", "VIRTUAL_ENV")


def executor_environment(slots: int | None = None) -> dict[str, str]:
    """The embedded executor's environment: no app secrets (RANKLAB_EXECUTOR_* settings pass)."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name in _PASSED_TO_EXECUTOR or name.startswith("RANKLAB_EXECUTOR_")
    }
    if slots is not None:
        # Runs executed at once (the executor's default is one per core).
        environment["RANKLAB_EXECUTOR_MAX_CONCURRENT_RUNS"] = str(slots)
    return environment


def spawn_executor(
    host: str,
    port: int,
    trusted: bool = False,
    log: IO[bytes] | None = None,
    slots: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start `ranklab executor serve` in its own process group (so it can be stopped whole)."""
    command = [
        sys.executable,
        "-m",
        "app.cli",
        "executor",
        "serve",
        "--host",
        host,
        "--port",
        str(port),
    ]
    if trusted:
        command.append("--trusted")
    return subprocess.Popen(
        command,
        env=executor_environment(slots),
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT if log else None,
    )


def stop_executor(process: subprocess.Popen[bytes]) -> None:
    """Stop an executor and everything it started."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def free_port() -> int:
    """Return a TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def temporary_executor(
    trusted: bool = False, wait_s: float = 180.0, slots: int | None = None
) -> Iterator[str]:
    """Run a private executor (`slots` runs at once, else one per core); yield its URL when warm."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # Its access log would drown the command's own output; kept to explain a failed start.
    with tempfile.TemporaryFile() as log:
        process = spawn_executor("127.0.0.1", port, trusted, log, slots)
        try:
            client = HttpExecutorClient(url)
            deadline = time.monotonic() + wait_s
            while client.health() is None:
                if process.poll() is not None:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"the executor exited ({process.returncode}):\n{tail}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the executor was not warm after {wait_s:.0f} s")
                time.sleep(0.2)
            yield url
        finally:
            stop_executor(process)


def serve(settings: Settings, host: str, port: int, with_executor: bool = True) -> int:
    """Start the executor (if embedded), then serve the app until interrupted."""
    executor = None
    if with_executor and settings.executor_url:
        parts = urlsplit(settings.executor_url)
        if parts.hostname in ("127.0.0.1", "localhost"):  # a remote executor runs elsewhere
            executor = spawn_executor(parts.hostname, parts.port or 8001)
    try:
        uvicorn.run(create_app(settings), host=host, port=port, log_level="info")
    finally:
        if executor is not None:
            stop_executor(executor)
    return 0

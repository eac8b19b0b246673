"""`ranklab serve`: the web app, plus the embedded executor next to it (the `make run` default).

The executor is its own process and HTTP service (it owns torch); the app only talks to it over
HTTP. If it cannot start, the app still serves challenges and pages say runs are unavailable.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from urllib.parse import urlsplit

import uvicorn

from app.config import Settings
from app.main import create_app


def _start_executor(settings: Settings) -> subprocess.Popen[bytes] | None:
    if not settings.executor_url:
        return None
    parts = urlsplit(settings.executor_url)
    if parts.hostname not in ("127.0.0.1", "localhost"):
        return None  # a remote executor is someone else's to run
    command = [
        sys.executable,
        "-m",
        "app.cli",
        "executor",
        "serve",
        "--host",
        parts.hostname,
        "--port",
        str(parts.port or 8001),
    ]
    try:
        return subprocess.Popen(command, start_new_session=True)
    except OSError as error:
        print(
            f"ranklab: executor did not start ({error}); runs will be unavailable", file=sys.stderr
        )
        return None


def serve(settings: Settings, host: str, port: int, with_executor: bool = True) -> int:
    """Start the executor (if embedded), then serve the app until interrupted."""
    executor = _start_executor(settings) if with_executor else None
    try:
        uvicorn.run(create_app(settings), host=host, port=port, log_level="info")
    finally:
        if executor is not None and executor.poll() is None:
            os.killpg(executor.pid, signal.SIGTERM)
            try:
                executor.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(executor.pid, signal.SIGKILL)
    return 0

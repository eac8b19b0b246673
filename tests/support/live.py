"""Serve an app on a real loopback port from a background thread (for the browser tests)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from app import serving as serving_loop
from executor.ports import free_port


@contextmanager
def serving(app: Any, keep_alive_s: int = 5, **options: Any) -> Iterator[str]:
    """Run uvicorn with this ASGI app until the block ends (as `ranklab serve` runs it: httptools,
    and uvloop accepting as app.serving does, where installed); yield its URL once it listens."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        loop=serving_loop.LOOP,
        log_level="warning",
        timeout_keep_alive=keep_alive_s,
        **options,  # more of uvicorn's (app.serving.proxy_options)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the live server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)

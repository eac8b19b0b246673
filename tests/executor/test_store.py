"""The run's store process (executor/store.py) listens before the request and ends with init."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket

import pytest

from executor import store
from executor.limits import Limits, run_budget
from executor.ports import free_port

pytestmark = pytest.mark.executor


def test_the_store_listens_before_any_request_and_ends_when_init_does() -> None:
    """A cell that never gets its request (discarded, or the executor stopping) ends with its
    init; in a trusted run no pid namespace takes the store with it. A store that waited for a
    signal instead outlived its executor (found as orphans after the test suite)."""
    pytest.importorskip("torch")
    port = free_port()
    budget = run_budget(9, 60.0, Limits(), "gloo", 0)
    pid, channel = store.fork(None, port, budget)
    try:
        assert store.listening(pid, channel, 60.0) == pid
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # it listens on MASTER_PORT already
        channel.close()  # what init's end does
        pidfd = os.pidfd_open(pid)
        try:
            assert select.select([pidfd], [], [], 10.0)[0], "the store outlived its init"
        finally:
            os.close(pidfd)
        assert os.waitpid(pid, 0)[0] == pid
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)

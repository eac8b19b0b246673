"""Attack: hold the host's memory in TCP socket buffers (loopback connections that are written
to and never read), which cgroup v1 charges to no limit of the run's unless told to: one run
held ~660 MiB of TCP memory while its memory cgroup showed 21 MiB. Must get: status ok, with
what the snippet managed to park in buffers bounded by the run's TCP limit (on v1, a quarter
of its memory budget; on v2 the buffers count against memory.max itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executor.contract import RunStatus
from executor.limits import Limits
from executor.runner import Executor
from executor.sandbox import TCP_SHARE_OF_MEMORY
from tests.support.executor import run

pytestmark = pytest.mark.executor

MIB = 1024 * 1024
ATTACK = """
import json, socket
listener = socket.create_server(("127.0.0.1", 0), backlog=128)
parked, chunk, pairs = 0, b"x" * (1 << 20), []
for _ in range(110):
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    client.setblocking(False)
    pairs.append((client, server))
    while parked < %d:
        try:
            parked += client.send(chunk)
        except BlockingIOError:
            break
print(json.dumps({"parked": parked, "connections": len(pairs)}))
"""
GOAL = 900 * MIB  # far past the run's TCP limit (and past 660 MiB, what was seen)


def test_a_run_cannot_park_unbounded_memory_in_socket_buffers(sandboxed: Executor) -> None:
    if not Path("/sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes").exists():
        pytest.skip("cgroup v1 TCP accounting only: on v2 buffers count as the run's memory")
    result = run(sandboxed, ATTACK % GOAL, nproc=1, timeout_s=30)
    assert result.status == RunStatus.OK, result
    report = json.loads(result.ranks[0].stdout)
    limits = Limits()
    memory = limits.memory_bytes_base + limits.memory_bytes_per_rank
    assert report["parked"] <= memory // TCP_SHARE_OF_MEMORY, report

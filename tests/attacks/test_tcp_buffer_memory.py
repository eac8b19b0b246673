"""Attack: hold the host's memory in TCP socket buffers (loopback connections that are written
to and never read), which cgroup v1 charges to no limit of the run's unless told to: one run
held ~660 MiB of TCP memory while its memory cgroup showed 21 MiB, and with the limit at a
quarter of its memory a 4-rank run still held 575 MiB of the host's one tcp_mem pool (half its
pressure mark on a 23 GiB host). Must get: status ok, with what the snippet managed to park in
buffers bounded by what gloo needs (Limits.tcp_bytes_per_run) and by the host's tcp_mem low
mark over twice this executor's slots (on v2 the buffers count against memory.max itself); and
gloo's own traffic at that limit still ends ok."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = [
    pytest.mark.executor,
    pytest.mark.skipif(
        not Path("/sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes").exists(),
        reason="cgroup v1 TCP accounting only: on v2 buffers count as the run's memory",
    ),
]

MIB = 1024 * 1024
TCP_MEM = "/proc/sys/net/ipv4/tcp_mem"  # pages: low, pressure, high
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
# gloo at its busiest in the measurements behind Limits.tcp_bytes_per_run: 4 ranks, 16 MiB.
GLOO = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(4 << 20)
for _ in range(10):
    dist.all_reduce(t)
gathered = [torch.empty(4 << 20) for _ in range(dist.get_world_size())]
dist.all_gather(gathered, t)
print(int(gathered[-1][0].item()))
"""


def test_a_run_cannot_park_more_than_gloo_needs_in_socket_buffers(sandboxed: Executor) -> None:
    result = run(sandboxed, ATTACK % GOAL, nproc=1, timeout_s=30)
    assert result.status == RunStatus.OK, result
    report = json.loads(result.ranks[0].stdout)
    low_bytes = int(Path(TCP_MEM).read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    own_slots = sandboxed.settings.max_concurrent_runs
    bound = min(sandboxed.settings.limits.tcp_bytes_per_run, low_bytes // (2 * own_slots))
    # Under the limit each socket still keeps about one segment queued (the kernel's per-socket
    # minimum): measured 52.7 MiB parked over 110 connections at 48 MiB.
    assert report["parked"] <= bound + report["connections"] * 64 * 1024, (report, bound)


def test_gloo_at_its_busiest_is_not_hindered_by_the_limit(sandboxed: Executor) -> None:
    result = run(sandboxed, GLOO, nproc=4, timeout_s=60)
    assert result.status == RunStatus.OK, result
    assert [rank.stdout for rank in result.ranks] == [f"{4**10}\n"] * 4

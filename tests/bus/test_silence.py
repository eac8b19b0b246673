"""Runs that print nothing for a while, through the job bus: real redis-server, real agents and
real ranks. The app's reader blocks in XREAD until the next event; silence is not an outage
(redis-py 8's default 5 s socket timeout failed every run silent for 5 s), and an outage is
not a hang."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from app.bus_client import RedisExecutorClient
from app.executor_client import RunEvent
from executor import bus
from executor.contract import (
    ExecutorUnavailable,
    OutputEvent,
    RankStatus,
    RunRequest,
    RunResult,
    RunStatus,
)
from tests.bus.conftest import Fleet, redis_server, result_events

SILENT = "import time\ntime.sleep(7)\nprint('woke')\n"  # longer than one 5 s XREAD BLOCK
DEADLOCK = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
tensor = torch.zeros(1)
dist.recv(tensor, src=1 - dist.get_rank())  # each rank waits for the other: neither sends
print("never")
"""


def _silent() -> RunRequest:
    return RunRequest(code=SILENT, nproc=1, timeout_s=20, use_cache=False)


@pytest.mark.executor
def test_a_run_silent_for_seven_seconds_gets_its_result(fleet: Fleet) -> None:
    result = RedisExecutorClient(fleet.redis_url).run(_silent())
    assert result.status is RunStatus.OK
    assert result.ranks[0].stdout == "woke\n"


@pytest.mark.executor
def test_the_async_reader_waits_through_the_silence_too(fleet: Fleet) -> None:
    client = RedisExecutorClient(fleet.redis_url)

    async def read() -> list[RunEvent]:
        return [event async for event in client.astream(_silent())]

    events = asyncio.run(read())
    # print() writes the text and its newline apart: they may come as one event or two.
    printed = [event for event in events if isinstance(event, OutputEvent)]
    assert printed and printed[0] is events[0]
    assert "".join(event.text for event in printed) == "woke\n"
    final = events[-1]
    assert isinstance(final, RunResult)
    assert final.status is RunStatus.OK


@pytest.mark.executor
def test_a_deadlocked_run_ends_at_its_timeout_with_one_result(
    fleet: Fleet, db: redis.Redis
) -> None:
    client = RedisExecutorClient(fleet.redis_url)
    request = RunRequest(code=DEADLOCK, nproc=2, backend="gloo", timeout_s=8, use_cache=False)
    run_id = client.submit(request)
    final = list(client.follow(run_id, client.timeout_s + request.timeout_s))[-1]
    assert isinstance(final, RunResult)
    assert final.status is RunStatus.TIMEOUT
    assert [rank.status for rank in final.ranks] == [RankStatus.TIMEOUT, RankStatus.TIMEOUT]
    assert len(result_events(db, run_id)) == 1


@pytest.fixture
def queued(tmp_path: Path) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """A Redis of its own holding one queued run that no agent takes: its URL, the run's id and
    the redis-server process."""
    with redis_server(tmp_path) as (url, process):
        run_id = RedisExecutorClient(url).submit(RunRequest(code="print(1)", nproc=1))
        yield url, run_id, process


def _blocked_readers(url: str) -> int:
    watcher = redis.Redis.from_url(url, decode_responses=True)
    try:
        found = watcher.client_list()
    finally:
        watcher.close()
    return sum(1 for entry in found if entry["cmd"] == "xread" and "b" in entry["flags"])


def test_a_redis_frozen_under_blocked_readers_is_reported_unreachable(
    queued: tuple[str, str, subprocess.Popen[bytes]],
) -> None:
    url, run_id, server = queued
    client = RedisExecutorClient(url)
    # A bound far beyond the bus's socket timeout: a reader still waiting then would wait
    # forever (the fixture's SIGKILL of redis-server frees it after the test).
    hangs_after_s = 4 * bus.SOCKET_TIMEOUT_S
    following: list[BaseException] = []

    def follow() -> None:  # the blocking reader (verify, `ranklab run`), in a thread
        try:
            list(client.follow(run_id, 600))
        except ExecutorUnavailable as error:
            following.append(error)

    async def resume() -> None:  # the SSE reader, following the queued run
        async for _event in client.events(run_id):
            pass

    async def run() -> None:  # a lab step or a Run it: submits its own run, then follows it
        async for _event in client.astream(RunRequest(code="print(2)", nproc=1)):
            pass

    async def scenario() -> None:
        readers = [asyncio.create_task(resume()), asyncio.create_task(run())]
        while _blocked_readers(url) < 3:  # all three wait in XREAD BLOCK
            await asyncio.sleep(0.05)
        # Frozen, as a host cut off the network: connections stay open, nothing answers.
        server.send_signal(signal.SIGSTOP)
        _done, waiting = await asyncio.wait(readers, timeout=hangs_after_s)
        if waiting:
            server.kill()  # frees them, so that the test fails instead of hanging
        assert not waiting, "an async reader still waits on a frozen Redis"
        for reader in readers:
            with pytest.raises(ExecutorUnavailable, match="unreachable"):
                reader.result()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    asyncio.run(scenario())
    thread.join(hangs_after_s)
    if thread.is_alive():
        server.kill()
    assert not thread.is_alive(), "the blocking reader still waits on a frozen Redis"
    assert "unreachable" in str(following[0])

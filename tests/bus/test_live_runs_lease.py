"""A lab run's driver keeps its lease while it records a stopped run, however long that takes:
the process that asked for the stop must not mistake it for a dead driver and end the log."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import anyio
import redis

from app.labs.live import RunLog, StopOutcome
from app.labs.live_redis import RedisLiveRuns, alive_key

RUN, LEARNER = 7, 3
LEASE_S = 1.0


def _no_record(_run_id: int, _status: str) -> bool:
    raise AssertionError("a live driver's run was recorded as cut off")


def test_a_stopped_run_whose_recording_outlasts_the_lease_ends_with_its_driver_s_events(
    queue_url: str,
) -> None:
    events: list[tuple[int | None, str, dict[str, Any]]] = []

    async def drive(log: RunLog) -> None:
        await log.add("output", {"rank": 0, "stream": "stdout", "text": "started\n"})
        try:
            await anyio.sleep(60)  # the ranks run until stopped
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(2 * LEASE_S)  # recording the run: slower than the lease
                await log.add("stopped", {"message": "Stopped: every rank was killed."})
                await log.add("checks", {"checks": [], "passed": False})

    async def scenario() -> StopOutcome:
        driver = RedisLiveRuns(queue_url, _no_record, lease_s=LEASE_S, read_block_s=0.2)
        other = RedisLiveRuns(queue_url, _no_record, lease_s=LEASE_S, read_block_s=0.2)
        await driver.start(RUN, LEARNER, drive)
        await asyncio.sleep(0.3)
        outcome = await other.stop(RUN, LEARNER)  # from another process
        frames = await other.follow(RUN, LEARNER, -1)
        assert frames is not None
        async with contextlib.aclosing(frames):
            async for frame in frames:
                events.append(frame)
        await driver.close()
        return outcome

    assert asyncio.run(scenario()) is StopOutcome.STOPPED
    assert [name for _, name, _ in events] == ["output", "stopped", "checks", "end"]
    assert events[1][2] == {"message": "Stopped: every rank was killed."}  # the driver's own


def test_a_run_its_driver_recorded_gets_only_its_end_when_a_reader_closes_the_log(
    queue_url: str,
) -> None:
    """The driver recorded the run but could not end its log (a Redis hiccup, then it died):
    the reader that closes the log must not add "cut off" and failed checks to a run whose own
    result and checks are already there and recorded."""
    recorded: list[tuple[int, str]] = []

    def already_recorded(run_id: int, status: str) -> bool:
        recorded.append((run_id, status))
        return False  # the row was no longer marked running

    async def drive(log: RunLog) -> None:
        await log.add("result", {"status": "ok"})
        await log.add("checks", {"checks": [], "passed": True})
        await anyio.sleep(60)  # as if its `end` were lost and it stalled

    async def scenario() -> list[str]:
        driver = RedisLiveRuns(queue_url, already_recorded, lease_s=60)
        reader = RedisLiveRuns(queue_url, already_recorded, lease_s=60, read_block_s=0.2)
        await driver.start(RUN, LEARNER, drive)
        await asyncio.sleep(0.3)
        client = redis.Redis.from_url(queue_url)
        client.delete(alive_key(RUN))  # the driver's lease is gone
        client.close()
        frames = await reader.follow(RUN, LEARNER, -1)
        assert frames is not None
        async with contextlib.aclosing(frames):
            names = [name async for _, name, _ in frames]
        await driver.close()
        return names

    assert asyncio.run(scenario()) == ["result", "checks", "end"]
    assert recorded == [(RUN, "unavailable")]

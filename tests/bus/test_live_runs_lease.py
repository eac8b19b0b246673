"""A lab run's driver keeps its lease while it records a stopped run, however long that takes:
the process that asked for the stop must not mistake it for a dead driver and end the log."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import anyio

from app.labs.live import RunLog, StopOutcome
from app.labs.live_redis import RedisLiveRuns

RUN, LEARNER = 7, 3
LEASE_S = 1.0


def _no_record(_run_id: int, _status: str) -> None:
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

"""The capacity limiter behind 503: slots, a bounded line, cancellation. No torch needed."""

from __future__ import annotations

import asyncio

import pytest

from executor.pool import CapacityLimiter, QueueFull


def test_runs_beyond_the_slots_wait_and_beyond_the_line_are_refused() -> None:
    async def scenario() -> None:
        limiter = CapacityLimiter(slots=1, queue=1)
        await limiter.acquire()
        waiting = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0)
        with pytest.raises(QueueFull):
            await limiter.acquire()
        limiter.release()
        await waiting  # the freed slot went to the one in line
        assert limiter.active == 1
        limiter.release()
        assert limiter.active == 0

    asyncio.run(scenario())


def test_a_cancelled_waiter_neither_keeps_nor_loses_a_slot() -> None:
    async def scenario() -> None:
        limiter = CapacityLimiter(slots=1, queue=2)
        await limiter.acquire()
        first = asyncio.create_task(limiter.acquire())
        second = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0)
        limiter.release()  # hand the slot to `first`...
        first.cancel()  # ...which is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await first
        await second  # the slot moved on instead of being lost
        assert limiter.active == 1
        limiter.release()
        assert limiter.active == 0

    asyncio.run(scenario())

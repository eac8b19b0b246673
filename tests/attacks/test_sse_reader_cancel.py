"""attack: SSE readers that hang up mid-read, over and over (tabs closed and reopened while a run
streams): a reader cancelled while the process's one read of the run was in flight could hang
in the hub's shutdown of that read, and the hub's connections outlived their readers (and the
event loop: "unclosed connection").
expect: a cancelled reader leaves at once, whatever the hub's read or its own catch-up read is
doing; each connection is closed by its one owner, so once the readers are gone (or the loop
has closed) Redis lists none of them; lab runs' readers the same."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import redis
import redis.asyncio as aredis

from app.bus_client import RedisExecutorClient
from app.labs.live_redis import RedisLiveRuns, alive_key, append, run_key
from executor import bus
from tests.support.waiting import wait_for

CANCEL_DB = 11  # apart from the other attacks' database: its clients are counted
ROUNDS = 40
READERS = 8
RUN = "c" * 32
LAB_RUN, LEARNER = 21, 5
HANG_BOUND_S = 10.0  # generous: a reader that is not gone by then is stuck


def _url(redis_url: str) -> str:
    return redis_url.rsplit("/", 1)[0] + f"/{CANCEL_DB}"


async def _clients(admin: aredis.Redis) -> list[dict[str, Any]]:
    """The connections open on this test's database, but the admin's own."""
    mine = await admin.client_id()
    clients: Any = await admin.client_list()
    return [c for c in clients if c["db"] == str(CANCEL_DB) and c["id"] != str(mine)]


async def _none_left(admin: aredis.Redis) -> list[dict[str, Any]]:
    """Wait a bounded while for the database's connections to go; what is left."""
    for _ in range(200):
        left = await _clients(admin)
        if not left:
            return left
        await asyncio.sleep(0.05)
    return left


async def _ticks(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def _cancel_rounds(start_reader: Any, write: Any) -> list[str]:
    """Start READERS readers, let them run a few ticks (a different number each round, so the
    cancel lands on each step of a read: the hub's XREAD, a catch-up page, the result), write,
    cancel them all; return the rounds in which a reader did not end within HANG_BOUND_S."""
    hung = []
    for round_ in range(ROUNDS):
        tasks = [asyncio.create_task(start_reader()) for _ in range(READERS)]
        await _ticks(round_ % 9)
        await write(round_)
        if round_ % 4 == 3:
            await asyncio.sleep(0.005)  # past the first reads: mid-XREAD, mid-catch-up
        for task in tasks:
            task.cancel()
        try:
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), HANG_BOUND_S)
        except TimeoutError:
            hung.append(f"round {round_}")
    return hung


def test_readers_cancelled_mid_read_never_hang_and_leave_no_connection(redis_url: str) -> None:
    url = _url(redis_url)
    executor = RedisExecutorClient(url)

    async def main() -> tuple[list[str], list[dict[str, Any]], int, list[dict[str, Any]]]:
        admin = aredis.Redis.from_url(url, decode_responses=True)
        await admin.flushdb()
        try:
            await admin.set(bus.queued_key(RUN), "1")

            async def read() -> None:
                async for _event in executor.events(RUN):
                    pass

            async def write(round_: int) -> None:
                async with admin.pipeline(transaction=False) as pipe:
                    pipe.delete(bus.events_key(RUN))  # each round's readers read from 0
                    for line in range(round_ % 3 * 120):  # now and then over a page behind
                        data = {"rank": 0, "stream": "stdout", "text": f"{round_}.{line}\n"}
                        fields = bus.encode_event(1, "output", data, "a")
                        pipe.xadd(bus.events_key(RUN), fields)  # type: ignore[arg-type]
                    await pipe.execute()

            hung = await _cancel_rounds(read, write)
            left = await _none_left(admin)
            following = executor.hub.readers()
            # A last reader still following when the loop closes: its connections close too.
            last = asyncio.create_task(read())
            reading: list[dict[str, Any]] = []
            for _ in range(200):  # its run's read is open
                reading = [c for c in await _clients(admin) if c["cmd"] == "xread"]
                if reading:
                    break
                await asyncio.sleep(0.05)
            assert not last.done()
            return hung, left, following, reading
        finally:
            await admin.flushdb()
            await admin.aclose()

    hung, left, following, reading = asyncio.run(asyncio.wait_for(main(), 240))
    assert hung == []
    assert left == [], [(c["cmd"], c["age"]) for c in left]
    assert following == 0
    assert reading  # the last reader's run's read, open as the loop closed: closed with it
    admin = redis.Redis.from_url(url, decode_responses=True)
    try:
        mine = str(admin.client_id())

        def none_open() -> bool:
            clients: Any = admin.client_list()
            return not [c for c in clients if c["db"] == str(CANCEL_DB) and c["id"] != mine]

        wait_for(none_open, 10, "the last reader's connections closed with its loop")
    finally:
        admin.close()


def test_lab_readers_cancelled_mid_read_never_hang_and_leave_no_connection(
    redis_url: str,
) -> None:
    url = _url(redis_url)
    following = RedisLiveRuns(url, lambda _run, _status: True, read_block_s=0.2)

    async def main() -> tuple[list[str], list[dict[str, Any]]]:
        admin = aredis.Redis.from_url(url, decode_responses=True)
        await admin.flushdb()
        try:
            await admin.hset(run_key(LAB_RUN), mapping={"user": str(LEARNER), "worker": "w"})
            await admin.set(alive_key(LAB_RUN), "w", ex=600)  # its driver alive throughout

            async def read() -> None:
                frames = await following.follow(LAB_RUN, LEARNER, -1)
                assert frames is not None
                async with contextlib.aclosing(frames):
                    async for _frame in frames:
                        pass

            async def write(round_: int) -> None:
                for line in range(round_ % 3 * 5):
                    output = {"rank": 0, "stream": "stdout", "text": f"{round_}.{line}\n"}
                    assert await append(admin, LAB_RUN, [("output", output)])

            hung = await _cancel_rounds(read, write)
            return hung, await _none_left(admin)
        finally:
            await admin.flushdb()
            await admin.aclose()

    hung, left = asyncio.run(asyncio.wait_for(main(), 240))
    assert hung == []
    assert left == [], [(c["cmd"], c["age"]) for c in left]

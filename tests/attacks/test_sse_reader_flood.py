"""attack: many browser tabs (or learners) following one bus run: each SSE reader held a Redis
connection of its own in an XREAD loop, so N readers were N connections and N reads per event,
without limit.
expect: one XREAD loop per run in the app process, whose entries are handed to every reader
(each gets every event, in order, a reader that does not read blocking nobody); the readers'
own reads share a few connections; past the caps a reader is refused (TooManyReaders: 429 for
a run, 503 for the process) and every connection is closed once the readers are gone."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio as aredis

from app.bus_client import RedisExecutorClient
from app.errors import TooManyRequests, Unavailable
from app.fanout import SHORT_CONNECTIONS, TooManyReaders
from app.labs.live import MemoryLiveRuns
from app.labs.live_redis import RedisLiveRuns, alive_key, append, run_key
from executor import bus
from executor.contract import RankResult, RunResult, RunStatus
from tests.support.learner import Learner
from tests.support.live import serving
from tests.support.waiting import wait_for

ATTACKS_DB = 10  # the agents of the bus tests serve database 0
READERS = 30
RUN = "f" * 32


def _url(redis_url: str) -> str:
    return redis_url.rsplit("/", 1)[0] + f"/{ATTACKS_DB}"


async def _output(client: aredis.Redis, text: str) -> None:
    fields = bus.encode_event(1, "output", {"rank": 0, "stream": "stdout", "text": text}, "a")
    await client.xadd(bus.events_key(RUN), fields)  # type: ignore[arg-type]


async def _connections(admin: aredis.Redis) -> list[dict[str, Any]]:
    """The clients on this test's database, but the admin one."""
    clients: Any = await admin.client_list()
    return [c for c in clients if c["db"] == str(ATTACKS_DB) and c["cmd"] != "client|list"]


async def _xreads(admin: aredis.Redis) -> int:
    """XREAD commands the server has run (the whole server: a loose bound)."""
    stats: Any = await admin.info("commandstats")
    return int(stats.get("cmdstat_xread", {}).get("calls", 0))


def test_many_readers_of_one_run_share_one_read_and_each_gets_every_event(
    redis_url: str,
) -> None:
    url = _url(redis_url)
    executor = RedisExecutorClient(url)
    texts = [f"line {n}\n" for n in range(3 * 256)]  # past a reader's queue: a slow one lags

    async def main() -> tuple[list[list[Any]], list[dict[str, Any]], list[dict[str, Any]], int]:
        admin = aredis.Redis.from_url(url, decode_responses=True)
        await admin.flushdb()
        try:
            await admin.set(bus.queued_key(RUN), "1")
            xreads = await _xreads(admin)
            await admin.xadd(bus.events_key(RUN), bus.encode_event(1, "start", {}, "a"))  # type: ignore[arg-type]
            await _output(admin, "first\n")
            got: list[list[Any]] = [[] for _ in range(READERS)]
            caught_up = [asyncio.Event() for _ in range(READERS)]
            slow_may_go = asyncio.Event()

            async def read(n: int) -> None:
                async for entry_id, name, payload in executor.events(RUN):
                    got[n].append((entry_id, name, payload.get("text")))
                    caught_up[n].set()
                    if n == 0:  # a reader that stops reading for a while
                        await slow_may_go.wait()

            tasks = [asyncio.create_task(read(n)) for n in range(READERS)]
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in caught_up)), 30)
            following = await _connections(admin)
            for text in texts:
                await _output(admin, text)
            rank = RankResult(rank=0, status="ok", exit_code=0, stdout="")
            result = RunResult(status=RunStatus.OK, duration_ms=5, ranks=[rank])
            await admin.set(bus.result_key(RUN), result.model_dump_json())
            await admin.xadd(bus.events_key(RUN), bus.encode_event(1, "result", {}, "a"))  # type: ignore[arg-type]
            await asyncio.wait_for(asyncio.gather(*tasks[1:]), 60)  # the slow one holds nobody
            slow_may_go.set()
            await asyncio.wait_for(tasks[0], 60)
            left = await _connections(admin)
            return got, following, left, await _xreads(admin) - xreads
        finally:
            await admin.flushdb()
            await admin.aclose()

    got, following, left, reads = asyncio.run(asyncio.wait_for(main(), 120))
    blocked = [c for c in following if "b" in c["flags"]]
    assert len(following) <= 1 + SHORT_CONNECTIONS, following
    assert len(blocked) <= 1, following  # one XREAD for the run, not one per reader
    expected = ["first\n", *texts, None]
    for reader in got:
        assert [text for _id, _name, text in reader] == expected
        assert [name for _id, name, _text in reader][-1] == "result"
        assert len({entry_id for entry_id, _name, _text in reader}) == len(reader)
    assert got[0] == got[1]  # the slow reader re-read what it missed: the same events
    assert left == []  # the readers gone, no connection is left open
    assert reads <= len(texts) + 50  # about one XREAD per entry, not one per reader


def test_readers_past_the_caps_are_refused(redis_url: str) -> None:
    url = _url(redis_url)
    executor = RedisExecutorClient(url, readers_per_run=3, readers=5)
    runs = (RUN, "e" * 32, "d" * 32)

    async def main() -> tuple[TooManyReaders, TooManyReaders]:
        admin = aredis.Redis.from_url(url, decode_responses=True)
        await admin.flushdb()
        try:
            for run in runs:
                await admin.set(bus.queued_key(run), "1")

            async def read(run: str) -> None:  # a tab held open on a run with no output yet
                async for _event in executor.events(run):
                    pass

            tasks = [asyncio.create_task(read(run)) for run in [runs[0]] * 3 + [runs[1]] * 2]
            while executor.hub.readers() < 5:
                await asyncio.sleep(0.01)
            with pytest.raises(TooManyReaders) as crowded_run:
                executor.admit(runs[0])
            with pytest.raises(TooManyReaders) as crowded_process:
                await anext(executor.events(runs[2]))
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            return crowded_run.value, crowded_process.value
        finally:
            await admin.flushdb()
            await admin.aclose()

    crowded_run, crowded_process = asyncio.run(asyncio.wait_for(main(), 60))
    assert not crowded_run.whole_process and "3 readers" in str(crowded_run)
    assert crowded_process.whole_process and "5 readers" in str(crowded_process)


def test_tabs_past_the_configured_caps_get_429_then_503_over_http(
    app_factory: Any, sqlite_url: str, redis_url: str
) -> None:
    """The caps come from the settings (RANKLAB_SSE_READERS_PER_RUN, RANKLAB_SSE_READERS) and
    reach the browser as the route's refusals, while the tabs already open keep reading."""
    url = _url(redis_url)
    runs = (RUN, "e" * 32, "d" * 32)
    admin = redis.Redis.from_url(url, decode_responses=True)
    admin.flushdb()
    for run in runs:
        admin.set(bus.queued_key(run), "1")
    app = app_factory(sqlite_url, queue_url=url, sse_readers_per_run=2, sse_readers=3)
    executor = app.state.executor
    assert isinstance(executor, RedisExecutorClient)

    def following() -> int:
        hub = executor._hub  # made on the server's loop by the first reader
        return hub.readers() if hub is not None else 0

    try:
        with (
            serving(app) as base,
            httpx.Client(base_url=base, timeout=10, follow_redirects=True) as http,
        ):
            learner = Learner(http)  # type: ignore[arg-type]
            learner.start_as_guest()
            with contextlib.ExitStack() as tabs:
                for run in (RUN, RUN):
                    tab = tabs.enter_context(http.stream("GET", f"/runs/{run}/events"))
                    assert tab.status_code == 200
                wait_for(lambda: following() == 2, 20, "two tabs following the run")
                crowded_run = http.get(f"/runs/{RUN}/events")
                assert crowded_run.status_code == 429 and "2 readers" in crowded_run.text
                tab = tabs.enter_context(http.stream("GET", f"/runs/{runs[1]}/events"))
                assert tab.status_code == 200
                wait_for(lambda: following() == 3, 20, "three tabs in all")
                crowded_process = http.get(f"/runs/{runs[2]}/events")
                assert crowded_process.status_code == 503 and "3 readers" in crowded_process.text
    finally:
        executor.client.close()  # its pooled connection (it asked whether each run is known)
        admin.flushdb()
        admin.close()


LAB_RUN, LEARNER = 9, 4


def test_many_readers_of_one_lab_run_share_one_read_and_one_cut_off(redis_url: str) -> None:
    """The same attack on a lab run's log (app.labs.live_redis): each reader held a connection
    in an XREAD loop, and each looked at the driver's lease and cut the run off itself."""
    url = _url(redis_url)
    cut_offs: list[tuple[int, str]] = []
    texts = [f"line {n}\n" for n in range(40)]

    def record_cut_off(run_id: int, status: str) -> bool:
        cut_offs.append((run_id, status))
        return True

    async def main() -> tuple[list[list[Any]], list[dict[str, Any]], list[Any]]:
        admin = aredis.Redis.from_url(url, decode_responses=True)
        await admin.flushdb()
        # A run as its driving process leaves it on Redis: its owner, its lease, its log.
        await admin.hset(run_key(LAB_RUN), mapping={"user": str(LEARNER), "worker": "gone"})
        await admin.set(alive_key(LAB_RUN), "gone")
        following = RedisLiveRuns(url, record_cut_off, read_block_s=0.2)
        try:
            got: list[list[Any]] = [[] for _ in range(READERS)]

            async def read(n: int) -> None:
                frames = await following.follow(LAB_RUN, LEARNER, -1)
                assert frames is not None
                async with contextlib.aclosing(frames):
                    async for index, name, payload in frames:
                        got[n].append((index, name, payload.get("text")))

            tasks = [asyncio.create_task(read(n)) for n in range(READERS)]
            for text in texts:
                output = {"rank": 0, "stream": "stdout", "text": text}
                assert await append(admin, LAB_RUN, [("output", output)])
            while not all(len(seen) == len(texts) for seen in got):
                await asyncio.sleep(0.01)
            clients = await _connections(admin)
            await admin.delete(alive_key(LAB_RUN))  # the driving process died
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
            return got, clients, await _connections(admin)
        finally:
            await admin.flushdb()
            await admin.aclose()

    got, clients, left = asyncio.run(asyncio.wait_for(main(), 120))
    reading = [c for c in clients if c["cmd"] == "xread"]
    assert len(reading) <= 1, clients  # one XREAD for the run, not one per reader
    expected = [*(("output", text) for text in texts), ("unavailable", None), ("checks", None)]
    for reader in got:
        assert [(name, text) for _index, name, text in reader] == [*expected, ("end", None)]
    assert cut_offs == [(LAB_RUN, "unavailable")]  # cut off once, by the run's one read
    assert left == [], [(c["cmd"], c["age"]) for c in left]


def test_lab_run_readers_past_the_caps_are_refused(redis_url: str) -> None:
    url = _url(redis_url)
    following = RedisLiveRuns(url, lambda _run, _status: True, readers_per_run=2, readers=3)
    runs = (LAB_RUN, LAB_RUN + 1, LAB_RUN + 2)

    async def main() -> tuple[TooManyRequests, Unavailable]:
        admin = aredis.Redis.from_url(url, decode_responses=True)
        await admin.flushdb()
        try:
            for run in runs:  # runs in progress, their drivers alive, nothing printed yet
                await admin.hset(run_key(run), mapping={"user": str(LEARNER), "worker": "w"})
                await admin.set(alive_key(run), "w")

            async def read(run: int) -> None:
                frames = await following.follow(run, LEARNER, -1)
                assert frames is not None
                async for _frame in frames:
                    pass

            tasks = [asyncio.create_task(read(run)) for run in (runs[0], runs[0], runs[1])]
            while following.hub.readers() < 3:
                for task in tasks:
                    if task.done():
                        task.result()  # a reader that ended early says why
                await asyncio.sleep(0.01)
            with pytest.raises(TooManyRequests) as crowded_run:
                await following.follow(runs[0], LEARNER, -1)
            with pytest.raises(Unavailable) as crowded_process:
                await following.follow(runs[2], LEARNER, -1)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            return crowded_run.value, crowded_process.value
        finally:
            await admin.flushdb()
            await admin.aclose()

    crowded_run, crowded_process = asyncio.run(asyncio.wait_for(main(), 60))
    assert crowded_run.status_code == 429 and "2 readers" in crowded_run.message
    assert crowded_process.status_code == 503 and "3 readers" in crowded_process.message


def test_readers_of_lab_runs_in_one_process_are_capped_too(
    app_factory: Any, sqlite_url: str
) -> None:
    """The same flood without a job bus (the embedded executor: app.labs.live.MemoryLiveRuns):
    every tab following a lab run was another reader, without limit. The settings' caps hold
    there as on the bus: 429 past a run's, 503 past the process's, and a tab that closes gives
    its place back. A finished run's replay counts for neither."""
    app = app_factory(sqlite_url, sse_readers_per_run=2, sse_readers=3)
    live = app.state.live_runs
    assert isinstance(live, MemoryLiveRuns)

    async def main() -> list[str]:
        release = asyncio.Event()

        async def drive(log: Any) -> None:
            await log.add("queued", {})
            await release.wait()

        for run_id in (1, 2, 3):
            await live.start(run_id, LEARNER, drive)
        refused = []
        readers = [await live.follow(1, LEARNER, -1), await live.follow(1, LEARNER, -1)]
        with pytest.raises(TooManyRequests) as crowded_run:
            await live.follow(1, LEARNER, -1)
        refused.append(crowded_run.value.message)
        readers.append(await live.follow(2, LEARNER, -1))
        with pytest.raises(Unavailable) as crowded_process:
            await live.follow(3, LEARNER, -1)
        refused.append(crowded_process.value.message)
        first = readers[0]
        assert first is not None
        assert (await anext(first))[1] == "queued"  # it reads while others are refused
        await first.aclose()  # a tab closes: its place is free again
        readers[0] = await live.follow(3, LEARNER, -1)
        release.set()
        for reader in readers:
            assert reader is not None
            assert [name async for _, name, _ in reader][-1] == "end"
        for _ in range(5):  # ended: replays, not readers
            replay = await live.follow(1, LEARNER, -1)
            assert replay is not None
        assert live._following == {}
        return refused

    crowded_run, crowded_process = asyncio.run(asyncio.wait_for(main(), 30))
    assert "2 readers" in crowded_run and "3 readers" in crowded_process

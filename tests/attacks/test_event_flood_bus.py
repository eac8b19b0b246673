"""attack: a run printing a byte at a time: each chunk became an entry of the run's Redis
stream (~49k for one lab run, +7 MiB in Redis for an hour), for every reader to relay; the
streams had no MAXLEN.
expect: an agent puts at most MAX_OUTPUT_EVENTS output entries on a run's stream (it still
drains the run to its result, which holds the output), every stream the bus and the lab log
write is trimmed (EVENTS_MAXLEN), and a reader on the bus relays at most MAX_OUTPUT_EVENTS."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aredis

from app.bus_client import RedisExecutorClient
from app.labs import live_redis
from executor import bus
from executor.agent import Agent, AgentSettings
from executor.contract import OutputEvent, RankResult, RunRequest, RunResult, RunStatus

ATTACKS_DB = 13  # the agents of the bus tests serve database 0
FLOOD = 3 * bus.MAX_OUTPUT_EVENTS


class FloodingRunner:
    """A run that prints FLOOD one-byte chunks, then ends ok."""

    ready = True
    info: dict[str, Any] = {"torch": "fake", "trusted": True}

    def __init__(self) -> None:
        self.drained = False

    async def open(self, request: RunRequest) -> AsyncIterator[OutputEvent | RunResult]:
        return self._events()

    async def _events(self) -> AsyncIterator[OutputEvent | RunResult]:
        for _ in range(FLOOD):
            yield OutputEvent(rank=0, stream="stdout", text="x")
        self.drained = True
        rank = RankResult(rank=0, status="ok", exit_code=0, stdout="x" * FLOOD)
        yield RunResult(status=RunStatus.OK, duration_ms=5, ranks=[rank])


def _url(redis_url: str) -> str:
    return redis_url.rsplit("/", 1)[0] + f"/{ATTACKS_DB}"


def test_an_agent_caps_a_runs_output_entries_and_readers_relay_no_more(redis_url: str) -> None:
    url = _url(redis_url)
    runner = FloodingRunner()

    async def main() -> tuple[list[str], int, list[str]]:
        client = aredis.Redis.from_url(url, decode_responses=True)
        await client.flushdb()
        stopping = asyncio.Event()
        settings = AgentSettings(pool="cpu", name="attacks", block_s=0.1, heartbeat_s=0.1)
        serving = asyncio.create_task(Agent(client, runner, settings).serve(stopping))
        try:
            request = RunRequest(code="flood", nproc=1, use_cache=False)
            await client.set(bus.queued_key("r-flood"), "1")
            entry = {"run_id": "r-flood", "request": request.model_dump_json()}
            await client.xadd(bus.runs_key("cpu"), entry)  # type: ignore[arg-type]
            while not await client.get(bus.result_key("r-flood")):
                await asyncio.sleep(0.02)
            entries: Any = await client.xrange(bus.events_key("r-flood"))
            relayed = [
                name async for _id, name, _data in RedisExecutorClient(url).events("r-flood")
            ]
            stopping.set()
            await asyncio.wait_for(serving, 20)
            return [fields["kind"] for _id, fields in entries], len(entries), relayed
        finally:
            serving.cancel()
            await client.flushdb()
            await client.aclose()

    kinds, length, relayed = asyncio.run(asyncio.wait_for(main(), 60))
    assert runner.drained
    assert kinds.count("output") == bus.MAX_OUTPUT_EVENTS
    assert kinds[-1] == "result" and length <= bus.EVENTS_MAXLEN
    assert relayed == ["output"] * bus.MAX_OUTPUT_EVENTS + ["result"]


def test_a_lab_runs_log_on_redis_is_trimmed(redis_url: str) -> None:
    url = _url(redis_url)
    flood = [("output", {"rank": 0, "stream": "stdout", "text": "x"})] * (2 * bus.EVENTS_MAXLEN)

    async def main() -> int:
        client = aredis.Redis.from_url(url, decode_responses=True)
        await client.flushdb()
        try:
            assert await live_redis.append(client, 7, flood)
            return int(await client.xlen(live_redis.events_key(7)))
        finally:
            await client.flushdb()
            await client.aclose()

    # Trimmed approximately: whole nodes of up to 100 entries go at once.
    assert asyncio.run(main()) <= bus.EVENTS_MAXLEN + 100

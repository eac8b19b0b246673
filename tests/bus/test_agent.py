"""The agent's delivery rules on the real Redis, with a fake executor in the test's own process
(no torch): set aside what cannot run, ack what is done, stop what nobody waits for, finish
what is running on SIGTERM. Runs on the gpu pool, which the real agents of test_fleet leave
alone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from executor import bus
from executor.agent import Agent, AgentSettings
from executor.cache import cache_key
from executor.contract import (
    OutputEvent,
    RankResult,
    RankStatus,
    RunRequest,
    RunResult,
    RunStatus,
)
from executor.limits import LimitViolation

POOL: bus.Pool = "gpu"
STREAM = bus.runs_key(POOL)
RANK_ENDS = {
    RunStatus.OK: RankStatus.OK,
    RunStatus.ERROR: RankStatus.ERROR,
    RunStatus.TIMEOUT: RankStatus.TIMEOUT,
    RunStatus.MEMORY_LIMIT: RankStatus.KILLED,
}


class FakeRunner:
    """Yields a line, then waits for `release` (if set), then an ok result (or `ends`, a run
    status, with its rank ending as such a run's ranks do)."""

    def __init__(
        self, release: asyncio.Event | None = None, ends: RunStatus = RunStatus.OK
    ) -> None:
        self.release = release
        self.ends = ends
        self.opened: list[RunRequest] = []
        self.closed = 0

    @property
    def ready(self) -> bool:
        return True

    @property
    def info(self) -> dict[str, Any]:
        return {"torch": "fake", "trusted": True}

    async def open(self, request: RunRequest) -> AsyncIterator[OutputEvent | RunResult]:
        if request.nproc > 64:
            raise LimitViolation("nproc must be at most 64", 422)
        self.opened.append(request)
        return self._events()

    async def _events(self) -> AsyncIterator[OutputEvent | RunResult]:
        try:
            yield OutputEvent(rank=0, stream="stdout", text="working\n")
            if self.release is not None:
                await self.release.wait()
            ranked = RANK_ENDS[self.ends]
            rank = RankResult(rank=0, status=ranked, exit_code=0, stdout="working\n")
            yield RunResult(status=self.ends, duration_ms=5, ranks=[rank])
        finally:
            self.closed += 1


@pytest.fixture
def clean(db: redis.Redis) -> redis.Redis:
    """The gpu pool's streams, emptied."""
    db.delete(STREAM, bus.dead_key(POOL), bus.agents_key(POOL))
    bus.ensure_group(db, POOL)
    return db


def _request(**fields: Any) -> RunRequest:
    """A gpu-pool request that is run, never served from the shared cache (unless asked)."""
    return RunRequest(**{"code": "print(1)", "backend": "nccl", "use_cache": False, **fields})


def _serve(
    redis_url: str,
    runner: FakeRunner,
    scenario: Callable[[aredis.Redis, asyncio.Event], Awaitable[None]],
    **settings: Any,
) -> None:
    """Run an agent while `scenario` drives it; stop it gracefully afterwards."""

    async def main() -> None:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        stopping = asyncio.Event()
        agent_settings = AgentSettings(pool=POOL, name="fake", block_s=0.1, heartbeat_s=0.1,
                                       reclaim_after_s=0.5, **settings)  # fmt: skip
        serving = asyncio.create_task(Agent(client, runner, agent_settings).serve(stopping))
        try:
            await asyncio.wait_for(scenario(client, stopping), 20)
            stopping.set()
            await asyncio.wait_for(serving, 20)
        finally:
            serving.cancel()
            await client.aclose()

    asyncio.run(main())


async def _result(client: aredis.Redis, run_id: str) -> RunResult:
    while (raw := await client.get(bus.result_key(run_id))) is None:
        await asyncio.sleep(0.02)
    return RunResult.model_validate_json(raw)


def test_a_payload_that_does_not_parse_is_set_aside_with_a_result(
    redis_url: str, clean: redis.Redis
) -> None:
    clean.xadd(STREAM, {"run_id": "r-unreadable", "request": "{not json"})

    async def scenario(client: aredis.Redis, stopping: asyncio.Event) -> None:
        result = await _result(client, "r-unreadable")
        assert result.status is RunStatus.INTERNAL_ERROR
        assert "could not be read" in (result.message or "")

    runner = FakeRunner()
    _serve(redis_url, runner, scenario)
    dead: Any = clean.xrange(bus.dead_key(POOL))
    assert [fields["run_id"] for _id, fields in dead] == ["r-unreadable"]
    assert dead[0][1]["reason"] == "unreadable"
    assert clean.xpending(STREAM, bus.GROUP)["pending"] == 0  # acked
    assert runner.opened == []


def test_a_run_delivered_too_often_is_dead_lettered_not_run(
    redis_url: str, clean: redis.Redis
) -> None:
    entry = clean.xadd(STREAM, {"run_id": "r-poison", "request": _request().model_dump_json()})
    for ghost in ("ghost-1", "ghost-2", "ghost-3"):  # three agents took it and died
        if ghost == "ghost-1":
            clean.xreadgroup(bus.GROUP, ghost, {STREAM: ">"}, count=1)
        else:
            clean.xclaim(STREAM, bus.GROUP, ghost, 0, [entry])

    async def scenario(client: aredis.Redis, stopping: asyncio.Event) -> None:
        result = await _result(client, "r-poison")
        assert "failed on 3 executor hosts in a row" in (result.message or "")

    runner = FakeRunner()
    _serve(redis_url, runner, scenario, max_deliveries=3)
    assert runner.opened == []
    dead: Any = clean.xrange(bus.dead_key(POOL))
    assert dead[0][1]["reason"] == "delivered 4 times"
    finals: Any = clean.xrange(bus.events_key("r-poison"))
    assert [fields["kind"] for _id, fields in finals] == ["result"]


def test_a_run_whose_result_exists_is_acked_without_running_again(
    redis_url: str, clean: redis.Redis
) -> None:
    done = RunResult(status=RunStatus.OK, duration_ms=1, message="first")
    clean.set(bus.result_key("r-done"), done.model_dump_json())
    clean.xadd(STREAM, {"run_id": "r-done", "request": _request().model_dump_json()})

    async def scenario(client: aredis.Redis, stopping: asyncio.Event) -> None:
        while (await client.xinfo_groups(STREAM))[0]["lag"] != 0 or (
            await client.xpending(STREAM, bus.GROUP)
        )["pending"]:
            await asyncio.sleep(0.02)

    runner = FakeRunner()
    _serve(redis_url, runner, scenario)
    assert runner.opened == []
    assert clean.get(bus.result_key("r-done")) == done.model_dump_json()


def test_the_first_result_wins_and_the_final_event_carries_it(
    redis_url: str, clean: redis.Redis
) -> None:
    release = asyncio.Event()
    runner = FakeRunner(release)
    earlier = RunResult(status=RunStatus.ERROR, duration_ms=2, message="another host's")
    clean.xadd(STREAM, {"run_id": "r-race", "request": _request().model_dump_json()})

    async def scenario(client: aredis.Redis, stopping: asyncio.Event) -> None:
        while not runner.opened:
            await asyncio.sleep(0.02)
        # Another delivery of the same run finished first, while this one ran.
        await client.set(bus.result_key("r-race"), earlier.model_dump_json())
        release.set()
        while (
            not await client.xpending(STREAM, bus.GROUP)
            or (await client.xpending(STREAM, bus.GROUP))["pending"]
        ):
            await asyncio.sleep(0.02)

    _serve(redis_url, runner, scenario)
    events: Any = clean.xrange(bus.events_key("r-race"))
    assert [fields["kind"] for _id, fields in events] == ["start", "output", "result"]
    assert RunResult.model_validate_json(events[-1][1]["data"]) == earlier
    assert clean.get(bus.result_key("r-race")) == earlier.model_dump_json()


def test_a_request_over_the_limits_is_rejected_as_data(redis_url: str, clean: redis.Redis) -> None:
    clean.xadd(STREAM, {"run_id": "r-big", "request": _request(nproc=65).model_dump_json()})

    async def scenario(client: aredis.Redis, stopping: asyncio.Event) -> None:
        result = await _result(client, "r-big")
        assert result.status is RunStatus.REJECTED
        assert result.message == "nproc must be at most 64"

    _serve(redis_url, FakeRunner(), scenario)


def test_a_run_whose_reader_hung_up_is_stopped(redis_url: str, clean: redis.Redis) -> None:
    runner = FakeRunner(asyncio.Event())  # never released: it runs until stopped
    clean.xadd(STREAM, {"run_id": "r-gone", "request": _request().model_dump_json()})

    async def scenario(client: aredis.Redis, stopping: asyncio.Event) -> None:
        while not runner.opened:
            await asyncio.sleep(0.02)
        await client.set(bus.cancel_key("r-gone"), "1")
        result = await _result(client, "r-gone")
        assert result.message == bus.STOPPED_MESSAGE

    _serve(redis_url, runner, scenario)
    assert runner.closed == 1  # the executor's stream was closed: its ranks are killed


def test_sigterm_finishes_the_run_in_progress_then_leaves(
    redis_url: str, clean: redis.Redis
) -> None:
    release = asyncio.Event()
    runner = FakeRunner(release)
    clean.xadd(STREAM, {"run_id": "r-late", "request": _request().model_dump_json()})

    async def scenario(client: aredis.Redis, stopping: asyncio.Event) -> None:
        while not runner.opened:
            await asyncio.sleep(0.02)
        assert await client.hexists(bus.agents_key(POOL), "fake")
        stopping.set()  # what SIGTERM does
        await asyncio.sleep(0.3)  # the agent keeps the run going meanwhile (checked below)
        assert await client.get(bus.result_key("r-late")) is None
        release.set()

    _serve(redis_url, runner, scenario)
    assert RunResult.model_validate_json(clean.get(bus.result_key("r-late")) or "").status is (
        RunStatus.OK
    )
    assert clean.xpending(STREAM, bus.GROUP)["pending"] == 0
    assert not clean.hexists(bus.agents_key(POOL), "fake")  # its heartbeat is withdrawn
    consumers: Any = clean.xinfo_consumers(STREAM, bus.GROUP)
    assert "fake" not in [consumer["name"] for consumer in consumers]


def test_agents_share_a_result_by_content_hash(redis_url: str, clean: redis.Redis) -> None:
    request = _request(code="print('shared')", use_cache=True)
    clean.delete(bus.cache_key_name(cache_key(request, "fake", False)))
    first, second = FakeRunner(), FakeRunner()

    async def run_once(client: aredis.Redis, run_id: str) -> RunResult:
        await client.xadd(STREAM, {"run_id": run_id, "request": request.model_dump_json()})
        return await _result(client, run_id)

    async def on_host_a(client: aredis.Redis, stopping: asyncio.Event) -> None:
        assert not (await run_once(client, "r-share-1")).cached

    async def on_host_b(client: aredis.Redis, stopping: asyncio.Event) -> None:
        assert (await run_once(client, "r-share-2")).cached
        uncached = request.model_copy(update={"use_cache": False})
        await client.xadd(STREAM, {"run_id": "r-share-3", "request": uncached.model_dump_json()})
        assert not (await _result(client, "r-share-3")).cached  # verify asks for a fresh run

    _serve(redis_url, first, on_host_a)
    _serve(redis_url, second, on_host_b)
    assert len(first.opened) == 1
    assert [opened.use_cache for opened in second.opened] == [False]
    replayed: Any = clean.xrange(bus.events_key("r-share-2"))
    assert [fields["kind"] for _id, fields in replayed] == ["start", "output", "result"]
    assert json.loads(replayed[1][1]["data"])["text"] == "working\n"  # the output, replayed


@pytest.mark.parametrize("ends", [RunStatus.TIMEOUT, RunStatus.MEMORY_LIMIT])
def test_a_result_that_load_can_change_is_not_shared_nor_served_again(
    redis_url: str, clean: redis.Redis, ends: RunStatus
) -> None:
    request = _request(code=f"print('starved {ends}')", use_cache=True)
    shared = bus.cache_key_name(cache_key(request, "fake", False))
    clean.delete(shared)
    runner = FakeRunner(ends=ends)

    async def twice(client: aredis.Redis, stopping: asyncio.Event) -> None:
        for run_id in (f"r-{ends}-1", f"r-{ends}-2"):
            await client.xadd(STREAM, {"run_id": run_id, "request": request.model_dump_json()})
            found = await _result(client, run_id)
            assert (found.status, found.cached) == (ends, False)

    _serve(redis_url, runner, twice)
    assert len(runner.opened) == 2  # run again, not answered from the first one's result
    assert clean.get(shared) is None


def test_a_timeout_shared_by_an_older_agent_is_run_again(
    redis_url: str, clean: redis.Redis
) -> None:
    request = _request(code="print('was starved')", use_cache=True)
    shared = bus.cache_key_name(cache_key(request, "fake", False))
    starved = RunResult(status=RunStatus.TIMEOUT, duration_ms=20_000, message="starved")
    clean.set(shared, starved.model_dump_json())
    runner = FakeRunner()

    async def once(client: aredis.Redis, stopping: asyncio.Event) -> None:
        await client.xadd(STREAM, {"run_id": "r-stale", "request": request.model_dump_json()})
        found = await _result(client, "r-stale")
        assert (found.status, found.cached) == (RunStatus.OK, False)

    _serve(redis_url, runner, once)
    assert len(runner.opened) == 1
    assert RunResult.model_validate_json(clean.get(shared) or "").status is RunStatus.OK

"""What the job bus tells readers and operators: a queued run is known before an agent takes it,
the web request id travels with each run, and the queue shows at /metrics (read from Redis at
each scrape). Uses the gpu pool with no agent serving it, so the runs put there stay waiting."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis

from app import obs
from app.bus_client import QueueCollector, RedisExecutorClient
from executor import bus
from executor.contract import RunRequest

POOL: bus.Pool = "gpu"
GPU_RUN = RunRequest(code="print('hi')", backend="nccl")  # NCCL goes to the gpu pool


@pytest.fixture
def empty_pool(db: redis.Redis) -> Iterator[redis.Redis]:
    db.delete(bus.runs_key(POOL), bus.agents_key(POOL))
    bus.ensure_group(db, POOL)
    yield db
    db.delete(bus.runs_key(POOL))


def _gauges(collector: QueueCollector) -> dict[tuple[str, str], float]:
    return {
        (sample.name, sample.labels["pool"]): sample.value
        for family in collector.collect()
        for sample in family.samples
    }


def test_the_web_request_id_travels_with_the_run(redis_url: str, empty_pool: redis.Redis) -> None:
    client = RedisExecutorClient(redis_url)
    token = obs._request_id.set("req-42")
    try:
        run_id = client.submit(GPU_RUN)
    finally:
        obs._request_id.reset(token)
    unlabelled = client.submit(GPU_RUN)  # outside a web request: no id
    entries = {fields["run_id"]: fields for _, fields in empty_pool.xrange(bus.runs_key(POOL))}
    assert entries[run_id]["request_id"] == "req-42"
    assert "request_id" not in entries[unlabelled]


def test_the_queue_gauges_count_what_waits(redis_url: str, empty_pool: redis.Redis) -> None:
    collector = QueueCollector(RedisExecutorClient(redis_url), pools=(POOL,))
    assert _gauges(collector)[("ranklab_queue_depth", POOL)] == 0
    client = RedisExecutorClient(redis_url)
    client.submit(GPU_RUN)
    client.submit(GPU_RUN)
    gauges = _gauges(collector)
    assert gauges[("ranklab_queue_depth", POOL)] == 2
    assert gauges[("ranklab_queue_pending", POOL)] == 0
    assert gauges[("ranklab_agents", POOL)] == 0
    assert gauges[("ranklab_queue_oldest_wait_seconds", POOL)] >= 0


def test_an_unreachable_redis_shows_no_queue_figures_rather_than_failing_the_scrape() -> None:
    collector = QueueCollector(RedisExecutorClient("redis://127.0.0.1:1/0"))
    assert list(collector.collect()) == []


def test_a_run_can_be_followed_before_any_agent_has_taken_it(
    redis_url: str, empty_pool: redis.Redis
) -> None:
    client = RedisExecutorClient(redis_url)
    run_id = client.submit(GPU_RUN)  # no agent serves the gpu pool here: it stays queued
    assert asyncio.run(client.known(run_id))
    assert not asyncio.run(client.known(bus.new_run_id()))

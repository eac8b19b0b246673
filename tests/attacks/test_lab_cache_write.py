"""attack: a learner's lab run (their own code, run uncached) wrote its result into the shared
result cache, on the executor and through an agent, so what one learner's run observed was then
served to everyone who ran the same code with the cache on (Run it, lesson examples).
expect: a run that sets store_result False leaves both caches as they were; a run that asks for
the cache, or verify's fresh run (use_cache False, store_result left on), still writes them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aredis

from executor import bus
from executor.agent import Agent, AgentSettings
from executor.cache import cache_key
from executor.contract import RunRequest
from executor.runner import Executor
from tests.bus.test_agent import FakeRunner

LAB_CODE = "print('a lab run of mine')"
ATTACKS_DB = 12  # the agents of the bus tests serve database 0


@pytest.mark.executor
def test_a_lab_run_leaves_the_executors_cache_alone(executor: Executor) -> None:
    lab = RunRequest(code=LAB_CODE, nproc=1, use_cache=False, store_result=False)
    key = cache_key(lab, executor.info.get("torch", ""), not executor.settings.trusted)
    asyncio.run(executor.run(lab))
    assert executor.cache.get(key) is None
    asyncio.run(executor.run(lab.model_copy(update={"store_result": True})))  # verify's run
    assert executor.cache.get(key) is not None


def test_a_lab_run_leaves_the_agents_shared_cache_alone(redis_url: str) -> None:
    url = redis_url.rsplit("/", 1)[0] + f"/{ATTACKS_DB}"
    lab = RunRequest(code=LAB_CODE, nproc=1, use_cache=False, store_result=False)
    shared = bus.cache_key_name(cache_key(lab, "fake", False))

    async def run(client: aredis.Redis, run_id: str, request: RunRequest) -> Any:
        await client.xadd(bus.runs_key("cpu"),
                          {"run_id": run_id, "request": request.model_dump_json()})  # fmt: skip
        while not await client.get(bus.result_key(run_id)):
            await asyncio.sleep(0.02)
        return await client.get(shared)

    async def main() -> tuple[Any, Any]:
        client = aredis.Redis.from_url(url, decode_responses=True)
        await client.flushdb()
        stopping = asyncio.Event()
        settings = AgentSettings(pool="cpu", name="attacks", block_s=0.1, heartbeat_s=0.1)
        serving = asyncio.create_task(Agent(client, FakeRunner(), settings).serve(stopping))
        try:
            after_lab = await run(client, "r-lab", lab)
            after_verify = await run(
                client, "r-verify", lab.model_copy(update={"store_result": True})
            )
            stopping.set()
            await asyncio.wait_for(serving, 20)
            return after_lab, after_verify
        finally:
            serving.cancel()
            await client.flushdb()
            await client.aclose()

    after_lab, after_verify = asyncio.run(asyncio.wait_for(main(), 60))
    assert after_lab is None
    assert after_verify is not None

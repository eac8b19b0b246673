"""attack: a snippet writes its own result record on fd 3, where its rank reports how it ended:
a forged one (claims exit 0 and no exception, and carries 12 MB past the 64 KiB output cap)
before exiting 3, or a malformed one (an exception that is not an object). The executor took the
record's exit code over the kernel's, stored the 12 MB in the result, and a malformed record
failed the result's validation: HTTP 500, and through an agent three retries, then "failed on 3
executor hosts".
expect: error, both times, as data: the rank's status and exit code are the kernel's (3, 0), the
record is set aside with a message naming fd 3, the result stays small; through the HTTP service
a 200, and through an agent one run and one result, no retry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aredis

from executor import bus
from executor.agent import Agent, AgentSettings
from executor.contract import RankStatus, RunRequest, RunResult, RunStatus
from executor.runner import Executor
from executor.service import create_app

pytestmark = pytest.mark.executor

FORGED = """
import json, os
forged = {"rank": 0, "exit_code": 0, "exception": None, "padding": "x" * 12_000_000}
os.write(3, (json.dumps(forged) + "\\n").encode())
print("forged")
os._exit(3)
"""
MALFORMED = """
import os
os.write(3, b'{"rank": 0, "exit_code": 0, "exception": "not an object"}\\n')
print("malformed", flush=True)
os._exit(0)  # no honest record after it
"""
CASES = {"forged": (FORGED, 3), "malformed": (MALFORMED, 0)}  # code, the rank's real exit code


def check(result: RunResult, name: str) -> None:
    """The run is an error with the kernel's exit code, and none of the record's claims."""
    exit_code = CASES[name][1]
    assert result.status is RunStatus.ERROR, result
    rank = result.ranks[0]
    assert (rank.status, rank.exit_code, rank.exception) == (RankStatus.ERROR, exit_code, None)
    assert rank.stdout == f"{name}\n"
    assert "fd 3" in (result.message or "")
    assert len(result.model_dump_json()) < 64 * 1024  # the 12 MB went nowhere


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_record_written_by_the_snippet_is_an_error_through_http(
    sandboxed: Executor, name: str
) -> None:
    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(sandboxed.settings, executor=sandboxed))
        async with httpx.AsyncClient(transport=transport, base_url="http://executor") as client:
            request = {"code": CASES[name][0], "nproc": 1, "use_cache": False}
            return await client.post("/v1/runs", json=request, timeout=60)

    response = asyncio.run(post())
    assert response.status_code == 200, response.text
    check(RunResult.model_validate(response.json()), name)


class Counting:
    """The real executor, counting the runs the agent starts on it."""

    def __init__(self, runner: Executor) -> None:
        self.runner = runner
        self.opened = 0

    @property
    def ready(self) -> bool:
        return self.runner.ready

    @property
    def info(self) -> dict[str, Any]:
        return self.runner.info

    async def open(self, request: RunRequest) -> AsyncIterator[Any]:
        self.opened += 1
        return await self.runner.open(request)


# A Redis database of these tests' own: the session's real agents serve database 0.
ATTACKS_DB = 11


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_record_written_by_the_snippet_is_one_result_through_an_agent(
    sandboxed: Executor, redis_url: str, name: str
) -> None:
    url = redis_url.rsplit("/", 1)[0] + f"/{ATTACKS_DB}"
    runner = Counting(sandboxed)
    run_id = f"r-{name}-record"

    async def main() -> tuple[RunResult, list[Any], int]:
        client = aredis.Redis.from_url(url, decode_responses=True)
        await client.flushdb()
        stopping = asyncio.Event()
        settings = AgentSettings(pool="cpu", name="attacks", block_s=0.1, heartbeat_s=0.1,
                                 reclaim_after_s=0.5, max_deliveries=3)  # fmt: skip
        serving = asyncio.create_task(Agent(client, runner, settings).serve(stopping))
        try:
            request = RunRequest(code=CASES[name][0], nproc=1, use_cache=False)
            await client.xadd(bus.runs_key("cpu"),
                              {"run_id": run_id, "request": request.model_dump_json()})  # fmt: skip
            while (raw := await client.get(bus.result_key(run_id))) is None:
                await asyncio.sleep(0.05)
            stopping.set()
            await asyncio.wait_for(serving, 30)
            dead: Any = await client.xrange(bus.dead_key("cpu"))
            pending = (await client.xpending(bus.runs_key("cpu"), bus.GROUP))["pending"]
            return RunResult.model_validate(json.loads(raw)), dead, pending
        finally:
            serving.cancel()
            await client.flushdb()
            await client.aclose()

    result, dead, pending = asyncio.run(asyncio.wait_for(main(), 120))
    check(result, name)
    assert (runner.opened, dead, pending) == (1, [], 0)  # run once, acked, never set aside

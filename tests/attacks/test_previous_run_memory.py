"""attack: a run reads what earlier runs left in memory. A slot worker used to receive each
request (the code) and pump every output event through its own heap, then fork the next run's
init from itself; freed objects keep their bytes, so every rank inherited the previous runs'
code and output and could read them through /proc/self/mem. A guest's lab run printed another
guest's whole lab code, private comments included.
expect: ok, and nothing found: run B, on the slots run A used, scans the whole of its memory on
every rank (1 to 4 ranks; embedded, through `executor serve`, through an agent) for the marker A
carried in a comment and the marker A printed, and finds neither, while it does find the marker
in its own code (the scan works)."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable

import httpx
import pytest
import redis.asyncio as aredis

from executor import bus
from executor.agent import Agent, AgentSettings
from executor.contract import RunRequest, RunResult, RunStatus
from executor.runner import Executor

pytestmark = pytest.mark.executor

# Run A: a private note in a comment, and a marker it prints that its code never spells out.
PREVIOUS = """
# private notes to self, do not share:
{notes}
import time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
for _ in range(20):  # as a training loop's log lines: each one an output event
    print("{tag}" + bytes.fromhex("{printed_hex}").decode(), flush=True)
    time.sleep(0.005)
dist.destroy_process_group()
"""
# Run B: every readable region of its own memory but read-only file mappings (code), searched
# for the tag and the 16 hex digits after it. Its own code carries a marker too: it must find it.
SCAN = """
# its own: {tag}{own}
import json, os, re
pattern = re.compile(("RL" + "LEAK").encode() + rb"([0-9a-f]{{16}})")
found = set()
memory = os.open("/proc/self/mem", os.O_RDONLY)
with open("/proc/self/maps") as maps:
    regions = [line.split() for line in maps]
for fields in regions:
    path = fields[5] if len(fields) > 5 else ""
    if "r" not in fields[1] or path in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
        continue
    if path.startswith("/") and "w" not in fields[1]:
        continue
    start, end = (int(part, 16) for part in fields[0].split("-"))
    while start < end:
        size = min(32 << 20, end - start)
        try:
            chunk = os.pread(memory, size + 32, start)
        except OSError:
            break
        found.update(match.group(1).decode() for match in pattern.finditer(chunk))
        start += size
print(json.dumps(sorted(found)))
"""
TAG = "RLLEAK"
SLOTS = 2  # the session's executors run two slots: run A goes to both at once


def markers() -> tuple[str, str]:
    """Two fresh 16-hex-digit markers: A's note and what A prints."""
    return secrets.token_hex(8), secrets.token_hex(8)


def previous(noted: str, printed: str) -> RunRequest:
    notes = "\n".join(f"# {line}: {TAG}{noted}" for line in range(20))
    code = PREVIOUS.format(tag=TAG, notes=notes, printed_hex=printed.encode().hex())
    return RunRequest(code=code, nproc=2, use_cache=False)


def scan(own: str, nproc: int) -> RunRequest:
    return RunRequest(code=SCAN.format(tag=TAG, own=own), nproc=nproc, timeout_s=60,
                      use_cache=False)  # fmt: skip


def check(previous_results: list[RunResult], printed: str, result: RunResult, own: str,
          noted: str) -> None:  # fmt: skip
    """A ran and printed its marker; B ran on every rank, found its own marker, not A's."""
    for first in previous_results:
        assert first.status is RunStatus.OK, first
        assert {rank.stdout for rank in first.ranks} == {f"{TAG}{printed}\n" * 20}
    assert result.status is RunStatus.OK, result
    for rank in result.ranks:
        found = set(json.loads(rank.stdout))
        assert own in found, (rank.rank, found)  # the scan reads memory that holds code
        assert noted not in found, f"rank {rank.rank} read the previous run's code"
        assert printed not in found, f"rank {rank.rank} read the previous run's output"


def attack(run: Callable[[RunRequest], Awaitable[RunResult]], nproc: int) -> None:
    """Run A on every slot at once, then B; check what B's ranks found."""
    noted, printed = markers()
    own = secrets.token_hex(8)

    async def main() -> tuple[list[RunResult], RunResult]:
        firsts = await asyncio.gather(*(run(previous(noted, printed)) for _ in range(SLOTS)))
        return list(firsts), await run(scan(own, nproc))

    firsts, result = asyncio.run(asyncio.wait_for(main(), 240))
    check(firsts, printed, result, own, noted)


@pytest.mark.parametrize("nproc", [1, 2, 3, 4])
def test_a_run_finds_nothing_of_the_previous_runs_in_its_memory(
    sandboxed: Executor, nproc: int
) -> None:
    attack(sandboxed.run, nproc)


def test_a_run_finds_nothing_of_the_previous_runs_through_executor_serve(
    executor_url: str,
) -> None:
    async def run(request: RunRequest) -> RunResult:
        async with httpx.AsyncClient(base_url=executor_url, timeout=120) as client:
            response = await client.post("/v1/runs", content=request.model_dump_json(),
                                         headers={"content-type": "application/json"})  # fmt: skip
            assert response.status_code == 200, response.text
            return RunResult.model_validate(response.json())

    attack(run, 2)


# A Redis database of these tests' own: the session's real agents serve database 0.
ATTACKS_DB = 12


def test_a_run_finds_nothing_of_the_previous_runs_through_an_agent(
    sandboxed: Executor, redis_url: str
) -> None:
    url = redis_url.rsplit("/", 1)[0] + f"/{ATTACKS_DB}"
    noted, printed = markers()
    own = secrets.token_hex(8)

    async def main() -> tuple[list[RunResult], RunResult]:
        client = aredis.Redis.from_url(url, decode_responses=True)
        await client.flushdb()
        stopping = asyncio.Event()
        settings = AgentSettings(pool="cpu", name="attacks-memory", slots=SLOTS, block_s=0.1,
                                 heartbeat_s=0.1, reclaim_after_s=5)  # fmt: skip
        serving = asyncio.create_task(Agent(client, sandboxed, settings).serve(stopping))

        async def through_agent(request: RunRequest, run_id: str) -> RunResult:
            await client.xadd(bus.runs_key("cpu"),
                              {"run_id": run_id, "request": request.model_dump_json()})  # fmt: skip
            while (raw := await client.get(bus.result_key(run_id))) is None:
                await asyncio.sleep(0.05)
            return RunResult.model_validate(json.loads(raw))

        try:
            firsts = await asyncio.gather(
                *(through_agent(previous(noted, printed), f"a-{n}") for n in range(SLOTS))
            )
            result = await through_agent(scan(own, 2), "b")
            stopping.set()
            await asyncio.wait_for(serving, 30)
            return list(firsts), result
        finally:
            serving.cancel()
            await client.flushdb()
            await client.aclose()

    firsts, result = asyncio.run(asyncio.wait_for(main(), 240))
    check(firsts, printed, result, own, noted)

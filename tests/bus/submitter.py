"""An app process for test_fleet: submits runs through RedisExecutorClient from 4 threads and
prints one JSON line per run (`python -m tests.bus.submitter URL FIRST COUNT`)."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

from app.bus_client import RedisExecutorClient
from executor.contract import OutputEvent, RunRequest, RunResult


def snippet(number: int) -> RunRequest:
    """Run `number`: every rank prints the run's number and its rank (never a cached result)."""
    code = f"import os\nprint('run {number} rank', os.environ['RANK'])\n"
    return RunRequest(code=code, nproc=1 + number % 2, backend="gloo", timeout_s=30)


def one(client: RedisExecutorClient, number: int) -> dict[str, object]:
    """Submit run `number`, follow it to the end, and report what was seen."""
    request = snippet(number)
    run_id = client.submit(request)
    streamed: dict[int, str] = {}
    result: RunResult | None = None
    for event in client.follow(run_id, 120):
        if isinstance(event, OutputEvent):
            streamed[event.rank] = streamed.get(event.rank, "") + event.text
        else:
            result = event
    assert result is not None
    return {
        "number": number,
        "run_id": run_id,
        "status": result.status.value,
        "stdout": {rank.rank: rank.stdout for rank in result.ranks},
        "streamed": streamed,
    }


def main(url: str, first: int, count: int) -> None:
    """Submit runs first … first+count-1 and print what each gave."""
    client = RedisExecutorClient(url, queue_limit=10_000)
    with ThreadPoolExecutor(4) as pool:
        for report in pool.map(lambda number: one(client, number), range(first, first + count)):
            print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))

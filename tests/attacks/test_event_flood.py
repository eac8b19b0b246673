"""attack: a snippet prints a few bytes at a time, flushing each: every read of a rank's pipe
became an output event (a lab run made ~49k events, 4 MB of SSE, and its result came 27 s after
its 20 s limit).
expect: ok, with the whole output in the result, and its events coalesced per rank: at most one
per rank and stream every 20 ms (output.COALESCE_S) plus one per 4 KiB, however the writes
come; each stream's text in the order the rank wrote it (test_stream_switch_flood.py: a rank
that switches streams at every write)."""

from __future__ import annotations

import asyncio

import pytest

from executor import output
from executor.contract import OutputEvent, RunRequest, RunResult, RunStatus
from executor.runner import Executor
from tests.support.executor import streamed

pytestmark = pytest.mark.executor

LINES = 12_000
FLOOD = f"""
import sys
for line in range({LINES}):
    print(line % 10, flush=True)
    if line % 3000 == 0:
        print("err", line, file=sys.stderr, flush=True)
"""


def test_output_written_a_few_bytes_at_a_time_streams_as_few_events(sandboxed: Executor) -> None:
    request = RunRequest(code=FLOOD, nproc=2, timeout_s=30, use_cache=False)
    events, result, seconds = streamed(sandboxed, request)
    assert result.status is RunStatus.OK, result
    expected_stdout = "".join(f"{line % 10}\n" for line in range(LINES))
    expected_stderr = "".join(f"err {line}\n" for line in range(0, LINES, 3000))
    for rank in result.ranks:
        assert (rank.stdout, rank.stderr) == (expected_stdout, expected_stderr)
        mine = [event for event in events if event.rank == rank.rank]
        # The events carry exactly what the result does, each stream in the order written.
        assert "".join(e.text for e in mine if e.stream == "stdout") == expected_stdout
        assert "".join(e.text for e in mine if e.stream == "stderr") == expected_stderr
        bound = seconds / output.COALESCE_S + len(rank.stdout + rank.stderr) / output.COALESCE_BYTES
        # + the stderr lines' own events (4 of them, each in a window of its own)
        assert len(mine) <= bound + 10, (len(mine), seconds)
    assert len(events) < LINES / 10  # a read per write made thousands


TRICKLE = """
import time
while True:
    print("tick", flush=True)
    time.sleep(0.001)
"""


def test_a_run_that_trickles_output_until_its_deadline_ends_within_a_second_of_it(
    sandboxed: Executor,
) -> None:
    """The lab run that made ~49k events ended 27 s after its 20 s limit; a run's own time
    (from its slot taking it to its result) stays within its limit and one second."""
    request = RunRequest(code=TRICKLE, nproc=2, timeout_s=3, use_cache=False)

    async def follow() -> tuple[int, RunResult]:
        count, result = 0, None
        async for event in await sandboxed.open(request):
            if isinstance(event, OutputEvent):
                count += 1
            elif isinstance(event, RunResult):
                result = event
        assert result is not None
        return count, result

    count, result = asyncio.run(follow())
    assert result.status is RunStatus.TIMEOUT, result
    assert all(rank.stdout.startswith("tick\ntick\n") for rank in result.ranks)
    assert result.duration_ms <= (request.timeout_s + 1) * 1000, result.duration_ms
    assert count <= 2 * request.timeout_s / output.COALESCE_S + 10, count

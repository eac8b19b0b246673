"""attack: each rank writes one byte to stdout, then one to stderr, then stdout again, a
millisecond apart, for seconds. Events were coalesced per rank, but a switch between the
streams sent what was pending at once, whatever COALESCE_S and SLOW_COALESCE_S said: 4 ranks for
9 s made 31,826 output events (1.97 MB of SSE), ~880 a second per rank, the closest 0.01 ms
apart (test_event_flood switched streams 8 times).
expect: the run ends as its snippet does, with each rank's whole output, exact, in its result;
its events carry the same text per stream, each rank's stream that wrote first comes first, and
they are as few as however else the rank wrote: per rank at most one per stream that wrote
within each COALESCE_S (and per COALESCE_BYTES), and past EVENTS_BEFORE_SLOWDOWN in the run one
per SLOW_COALESCE_S."""

from __future__ import annotations

import pytest

from executor import output
from executor.contract import RunRequest, RunStatus
from executor.runner import Executor
from tests.support.executor import streamed

pytestmark = pytest.mark.executor

SECONDS = 5
ALTERNATING = f"""
import os, time
start = time.time()
while time.time() - start < {SECONDS}:
    os.write(1, b"a")
    time.sleep(0.001)
    os.write(2, b"b")
    time.sleep(0.001)
"""


def test_output_that_switches_streams_at_every_byte_streams_as_few_events(
    sandboxed: Executor,
) -> None:
    request = RunRequest(code=ALTERNATING, nproc=4, timeout_s=30, use_cache=False)
    events, result, seconds = streamed(sandboxed, request)
    assert result.status is RunStatus.OK, result
    streams = 2
    for rank in result.ranks:
        # The result is exact: every byte, in its stream.
        assert rank.stdout and set(rank.stdout) == {"a"}, rank.stdout[:80]
        assert set(rank.stderr) == {"b"} and len(rank.stderr) == len(rank.stdout), rank
        mine = [event for event in events if event.rank == rank.rank]
        assert "".join(e.text for e in mine if e.stream == "stdout") == rank.stdout
        assert "".join(e.text for e in mine if e.stream == "stderr") == rank.stderr
        assert mine[0].stream == "stdout"  # the rank wrote there first
        windows = (
            seconds / output.COALESCE_S + len(rank.stdout + rank.stderr) / output.COALESCE_BYTES
        )
        assert len(mine) <= streams * (windows + 1), (len(mine), seconds)
    # Past the first EVENTS_BEFORE_SLOWDOWN, each rank's stream sends one every SLOW_COALESCE_S.
    slow = len(result.ranks) * streams * (seconds / output.SLOW_COALESCE_S + 2)
    assert len(events) <= output.EVENTS_BEFORE_SLOWDOWN + slow, (len(events), seconds)

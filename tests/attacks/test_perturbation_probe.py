"""attack: tell a run that verify perturbs (rank_delays_s) from a plain one, from inside, and
behave otherwise when perturbed: the type of sys.stdout (a stream class of its own when
delayed), its attributes, the environment, the rank's launch (reachable from the snippet's
caller frames, its delay_s on it), and the run's order in the memory the rank was forked with
(gc.get_objects(): its rank_delays_s, init's max_rank_delay_s).
expect: status ok both ways, and on every rank the same fingerprint with and without the
perturbation."""

from __future__ import annotations

import asyncio
import json

import pytest

from executor.contract import RunRequest, RunStatus
from executor.runner import Executor

pytestmark = pytest.mark.executor

PROBE = """
import gc, json, os, sys
frames, launches, frame = [], [], sys._getframe()
while frame is not None:
    for value in list(frame.f_locals.values()):
        if hasattr(value, "delay_s"):
            launches.append(value.delay_s)
    frame = frame.f_back
streams = [sys.stdin, sys.stdout, sys.stderr]
print(json.dumps({
    "types": [repr(type(stream)) for stream in streams],
    "mro": [repr(type(stream).__mro__) for stream in streams],
    "attributes": [sorted(vars(stream)) for stream in streams],
    "flags": [(stream.line_buffering, stream.write_through) for stream in streams[1:]],
    "environment": sorted(os.environ),
    "launch_delays": launches,
    "orders": [thing["rank_delays_s"] for thing in gc.get_objects()
               if isinstance(thing, dict) and "rank_delays_s" in thing],
    # Only the ranks init forks hold its cell: whether one shows a delay, not how many.
    "cell_delayed": any(thing.max_rank_delay_s for thing in gc.get_objects()
                        if "max_rank_delay_s" in getattr(thing, "__dict__", ())),
}))
"""


def fingerprints(runner: Executor, delays: list[float]) -> list[dict[str, object]]:
    request = RunRequest(code=PROBE, nproc=2, use_cache=False, rank_delays_s=delays)
    result = asyncio.run(runner.run(request))
    assert result.status is RunStatus.OK, result
    return [json.loads(rank.stdout) for rank in result.ranks]


def test_a_perturbed_run_looks_the_same_from_inside(sandboxed: Executor) -> None:
    plain, perturbed = fingerprints(sandboxed, []), fingerprints(sandboxed, [0.3, 0.0])
    assert plain[0]["launch_delays"], plain  # the probe reached the rank's launch
    assert any(rank["orders"] for rank in plain), plain  # ... and the run's order
    for rank, (seen, expected) in enumerate(zip(perturbed, plain, strict=True)):
        differing = {
            key: (seen[key], expected[key]) for key in expected if seen[key] != expected[key]
        }
        assert not differing, (rank, differing)

"""attack: before its first print, read verify's first-write delay off the rank's state:
sys.modules["executor.rank"]._first_write_delay (or type(sys.stdout).write.__globals__) read
[0.3] in a perturbed rank and [0.0] in a plain one, so a snippet could behave otherwise when
verify perturbs it (rank_delays_s).
expect: status ok both ways, and on every rank the same view before its first write: the rank
module's plain values, each function of its stdout's type (its globals' names, closure,
defaults), its descriptors and its environment's names. What this does not pin, and remains:
timing (a snippet can time its first print), and the pending delay in the one slot of
executor.rank._first_write, which a snippet that reads that slot or walks gc.get_objects()
still finds; see docs/executor.md, "Verify's perturbation"."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from executor.contract import RunRequest, RunStatus
from executor.runner import Executor

pytestmark = pytest.mark.executor

PROBE = """
import json, os, sys, types
PLAIN = (int, float, str, bytes, bool, type(None), list, tuple, dict, set, frozenset)
def shown(value):
    return repr(value) if isinstance(value, PLAIN) else type(value).__name__
def function_view(function):
    function = getattr(function, "__func__", function)
    return {
        "globals": sorted(getattr(function, "__globals__", {})),
        "closure": [shown(cell.cell_contents) for cell in function.__closure__ or ()],
        "defaults": shown(getattr(function, "__defaults__", None)),
        "kwdefaults": shown(getattr(function, "__kwdefaults__", None)),
    }
def descriptors():
    found = []
    for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
        try:  # the listing's own descriptor is gone by now
            found.append((fd, os.readlink(f"/proc/self/fd/{fd}").split(":")[0]))
        except OSError:
            pass
    return found
rank_module = sys.modules.get("executor.rank")
stream_type = type(sys.stdout)
view = {
    "rank_module": {name: shown(value) for name, value in vars(rank_module).items()},
    "stream_functions": {name: function_view(value) for name, value in vars(stream_type).items()
                         if isinstance(value, (types.FunctionType, classmethod, staticmethod))},
    "stream_attributes": sorted(vars(sys.stdout)),
    "descriptors": descriptors(),
    "environment": sorted(os.environ),
}
print(json.dumps(view))
"""


def views(runner: Executor, delays: list[float]) -> list[dict[str, Any]]:
    request = RunRequest(code=PROBE, nproc=2, use_cache=False, rank_delays_s=delays)
    result = asyncio.run(runner.run(request))
    assert result.status is RunStatus.OK, result
    return [json.loads(rank.stdout) for rank in result.ranks]


def differences(seen: dict[str, Any], expected: dict[str, Any]) -> dict[str, object]:
    """What differs, by view (and by name within a view that maps names)."""
    found: dict[str, object] = {}
    for view, value in expected.items():
        if isinstance(value, dict):
            for name in value.keys() | seen[view].keys():
                if value.get(name) != seen[view].get(name):
                    found[f"{view}.{name}"] = (seen[view].get(name), value.get(name))
        elif seen[view] != value:
            found[view] = (seen[view], value)
    return found


def test_a_rank_s_state_is_the_same_with_and_without_the_perturbation(
    sandboxed: Executor,
) -> None:
    plain, perturbed = views(sandboxed, []), views(sandboxed, [0.3, 0.3])
    assert plain[0]["rank_module"] and plain[0]["stream_functions"], plain  # it saw them
    for rank, (seen, expected) in enumerate(zip(perturbed, plain, strict=True)):
        differing = differences(seen, expected)
        assert not differing, (rank, differing)

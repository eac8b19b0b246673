"""attack: a deadlocked snippet gives its process group a short timeout through no word the
early stop's filter knew (`vars(datetime)["time" + "delta"]`, `**{"time" + "out": ...}`), then
asks verify's early stop (stop_when_stuck). The executor proved the ranks stuck and stopped
the run as a time-out in about two seconds, while the run would have ended by itself, in an
error, at the group's timeout: verify would have kept a hang that never happens.
expect: the executor declines to look; the run ends error at the group's timeout (8 s), well
within its limit, never stopped_when_stuck."""

from __future__ import annotations

import asyncio

import pytest

from executor.contract import RunRequest, RunStatus
from executor.runner import Executor

pytestmark = pytest.mark.executor

ATTACK = """
import datetime, torch, torch.distributed as dist
span = vars(datetime)["time" + "delta"](seconds=8)
dist.init_process_group("gloo", **{"time" + "out": span})
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))
else:
    dist.barrier()
"""


def test_a_deadline_set_without_its_words_is_never_stopped_as_a_hang(sandboxed: Executor) -> None:
    ends_at_its_own_deadline(sandboxed, ATTACK)


def ends_at_its_own_deadline(sandboxed: Executor, code: str) -> None:
    """A run asked to stop when stuck, whose snippet sets its own deadline, is not stopped: it
    ends in error at that deadline."""
    request = RunRequest(code=code, nproc=2, timeout_s=30, use_cache=False, stop_when_stuck=True)
    result = asyncio.run(sandboxed.run(request))
    assert not result.stopped_when_stuck, result
    assert result.status is RunStatus.ERROR, result
    assert any("timed out" in rank.stderr.lower() or "timeout" in rank.stderr.lower()
               for rank in result.ranks), result  # fmt: skip

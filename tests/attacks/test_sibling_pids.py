"""attack: a run's ranks fill its pids cgroup with threads at once, before a sibling warm parent
(siblings.py) has forked the run's other ranks: the sibling's worker for that slot sits in the
slot's cgroups, so its fork fails, and the worker dies.
expect: only that run suffers (it ends rejected, error or timeout, never ok, depending on which
fork hit the cap first); the siblings stay up (their worker for the slot is started again) and
the next 3-rank run, one rank from each warm parent, ends ok."""

from __future__ import annotations

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor

FILL = """
import threading, time
threading.stack_size(256 * 1024)
hold = threading.Event()
try:
    while True:
        threading.Thread(target=hold.wait, daemon=True).start()
except RuntimeError:
    pass
time.sleep(60)
"""
SUFFERED = {RunStatus.REJECTED, RunStatus.ERROR, RunStatus.TIMEOUT}
NORMAL = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print(t.item())
"""


def test_filling_the_pids_cgroup_before_a_sibling_forks_hurts_only_that_run(
    sandboxed: Executor,
) -> None:
    siblings = list(sandboxed.pool._siblings)
    assert len(siblings) == 2
    for _ in range(3):
        filled = run(sandboxed, FILL, nproc=3, timeout_s=3)
        assert filled.status in SUFFERED, filled
        after = run(sandboxed, NORMAL, nproc=3)
        assert after.status is RunStatus.OK, (filled, after)
        assert [rank.stdout for rank in after.ranks] == ["3.0\n"] * 3
    assert sandboxed.pool.ready  # the same warm parents, never restarted
    assert sandboxed.pool._siblings == siblings
    assert all(sibling.poll() is None for sibling in siblings)

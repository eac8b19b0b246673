"""Warm parents hold their heap in transparent huge pages (executor/hugepages.py), so that each
fork of one copies a page-table entry per 2 MiB rather than per 4 KiB; runs are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def anon_huge_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1]) // 1024
    return 0


def test_every_warm_parent_holds_its_heap_in_huge_pages_and_runs_still_work(
    executor: Executor,
) -> None:
    if not THP.exists() or "[never]" in THP.read_text():
        pytest.skip("this kernel offers no transparent huge pages")
    pool = executor.pool
    assert pool._process is not None
    parents = [pool._process.pid, *(sibling.pid for sibling in pool._siblings)]
    # ~220 MB of each is heap (torch's registrations, Python's objects); most of it collapses.
    assert all(anon_huge_mb(pid) >= 64 for pid in parents), {p: anon_huge_mb(p) for p in parents}
    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.ones(2) * (dist.get_rank() + 1)\n"
        "dist.all_reduce(t)\n"
        "big = torch.ones(8 * 1024 * 1024)  # 32 MB of the rank's own, after the fork\n"
        "print(t.tolist(), float(big.sum()))\n"
    )
    result = run(executor, code, nproc=2, timeout_s=30)
    assert result.status is RunStatus.OK, result
    assert [rank.stdout for rank in result.ranks] == ["[3.0, 3.0] 8388608.0\n"] * 2

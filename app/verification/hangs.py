"""Telling a hang from slowness by where the ranks were stuck, without a long re-run.

A run that timed out is a hang (not a slow rank) when every rank still running at the limit
was waiting inside a torch.distributed call that needs a peer (a collective, a point-to-point
transfer, a barrier, the rendezvous; or a DDP backward, which all-reduces) and used next to no
CPU over the executor's sample just before the kill: nobody is working, so nobody will ever
arrive. Anything less (a rank asleep, computing, or in an unknown place; no stack at all) leaves
the proof to the re-run at a much longer limit, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from executor.contract import RankResult, RankStatus, RunResult, RunStatus, StuckAt
from executor.stacks import waits_for_peer

# "No CPU progress": at most 2% of the sample window (a rank blocked in gloo measures 0 ms; one
# working through collectives took 20-80 ms of 100 with 2 cores under a load of 14).
IDLE_SHARE = 0.02


def waiting_idle(stuck: StuckAt | None) -> bool:
    """Whether a rank was blocked in a distributed wait and used (next to) no CPU."""
    if stuck is None or stuck.cpu_ms is None or not stuck.sample_ms:
        return False
    # A backward that uses no CPU at all is not computing but waiting for DDP's all-reduces.
    return waits_for_peer(stuck) and stuck.cpu_ms <= IDLE_SHARE * stuck.sample_ms


def proven_hang(result: RunResult) -> str | None:
    """Why this time-out is a hang ("every rank waits: …"), or None when it is not proven."""
    if result.status is not RunStatus.TIMEOUT:
        return None
    live = [rank for rank in result.ranks if rank.status is RankStatus.TIMEOUT]
    if not live or not all(waiting_idle(rank.stuck) for rank in live):
        return None
    why = f"every rank still running waits for a peer with no CPU progress: {stuck_lines(live)}"
    if result.stopped_when_stuck:  # proven by the executor's looks (executor/hangstop.py)
        seconds = result.duration_ms / 1000
        return f"{why} (the executor stopped the run after {seconds:.1f} s, before its limit)"
    return why


def stuck_lines(ranks: list[RankResult]) -> str:
    """ "rank 0: line 12, `dist.all_reduce`; rank 1: line 15, `dist.barrier`" (timed-out ranks)."""
    return "; ".join(
        f"rank {rank.rank}: {rank.stuck.describe()}" for rank in ranks if rank.stuck is not None
    )


def where_stuck(result: RunResult) -> str:
    """The stuck lines of a timed-out run, or "" when there are none."""
    return stuck_lines([rank for rank in result.ranks if rank.status is RankStatus.TIMEOUT])


def to_record(verdict: str, results: Iterable[RunResult]) -> dict[str, Any] | None:
    """What a passing verdict keeps of a hang for Run it to serve (the first time-out its runs
    observed, as JSON), or None: a key that passed on a time-out says the snippet hangs."""
    if verdict != "pass":
        return None
    timed_out = next((result for result in results if result.status is RunStatus.TIMEOUT), None)
    if timed_out is None:
        return None
    return timed_out.model_dump(mode="json", exclude_none=True, exclude={"cached"})

"""Proving a hang from where the ranks were stuck, and saying where they were, with no executor:
results are built by hand (tests/verification/test_hang_proof.py runs real deadlocks)."""

from __future__ import annotations

from app.verification.hangs import proven_hang
from app.verification.rules import Observation, Verdict, judge
from app.verification.service import describe_rank
from executor.contract import Environment, RankResult, RunResult, StuckAt
from tests.support.items import predict_item

ENV = Environment(torch="2.13.0+cpu", backend="gloo", device="cpu", nproc=2, python="3.11.7")
IDLE_IN_ALL_REDUCE = StuckAt(
    line=4, call="dist.all_reduce", distributed=True, cpu_ms=0, sample_ms=200
)
IDLE_IN_BARRIER = StuckAt(line=6, call="dist.barrier", distributed=True, cpu_ms=1, sample_ms=200)


def timed_out(*stuck: StuckAt | None, finished: int = 0) -> RunResult:
    ranks = [RankResult(rank=i, status="ok", exit_code=0) for i in range(finished)]
    ranks += [
        RankResult(rank=finished + i, status="timeout", stuck=where)
        for i, where in enumerate(stuck)
    ]
    return RunResult(status="timeout", duration_ms=2100, ranks=ranks, environment=ENV)


def test_every_running_rank_idle_in_a_collective_proves_a_hang():
    proof = proven_hang(timed_out(IDLE_IN_ALL_REDUCE, IDLE_IN_BARRIER))
    assert proof is not None
    assert proof.endswith("rank 0: line 4, `dist.all_reduce`; rank 1: line 6, `dist.barrier`")
    # DDP's backward all-reduces the gradients: idle there, it waits for them
    idle_backward = StuckAt(line=9, call="loss.backward", cpu_ms=0, sample_ms=200)
    assert proven_hang(timed_out(idle_backward, IDLE_IN_BARRIER)) is not None
    # so does its forward (the second one rebuilds the buckets, broadcasting their order)
    idle_forward = StuckAt(line=9, call="distributed.forward", cpu_ms=0, sample_ms=200)
    assert proven_hang(timed_out(idle_forward, IDLE_IN_BARRIER)) is not None
    # a rank that ended before the limit does not stand in the way
    assert proven_hang(timed_out(IDLE_IN_BARRIER, finished=1)) is not None


def test_anything_less_leaves_the_proof_to_the_long_rerun():
    working = IDLE_IN_BARRIER.model_copy(update={"cpu_ms": 60})
    asleep = StuckAt(line=3, call="time.sleep", cpu_ms=0, sample_ms=200)
    unknown = StuckAt(cpu_ms=0, sample_ms=200)
    unmeasured = IDLE_IN_BARRIER.model_copy(update={"cpu_ms": None})
    not_waiting = StuckAt(line=2, call="dist.get_rank", distributed=True, cpu_ms=0, sample_ms=200)
    for other in (working, asleep, unknown, unmeasured, not_waiting, None):
        assert proven_hang(timed_out(IDLE_IN_ALL_REDUCE, other)) is None, other
    busy_backward = StuckAt(line=9, call="loss.backward", cpu_ms=150, sample_ms=200)
    assert proven_hang(timed_out(IDLE_IN_ALL_REDUCE, busy_backward)) is None
    another_forward = StuckAt(line=9, call="net.forward", cpu_ms=0, sample_ms=200)
    assert proven_hang(timed_out(IDLE_IN_ALL_REDUCE, another_forward)) is None
    ended = timed_out(IDLE_IN_ALL_REDUCE).model_copy(update={"status": "error"})
    assert proven_hang(ended) is None


def hang_item():
    return predict_item(
        options=[
            {"id": "A", "text": "hangs", "outcome": {"hangs": True}},
            {"id": "B", "text": "prints", "outcome": {"ranks": {"all": {"stdout": "1\n"}}}},
        ]
    )


def test_a_hang_proven_by_stacks_needs_no_long_rerun_and_says_where():
    result = timed_out(IDLE_IN_ALL_REDUCE, IDLE_IN_BARRIER)
    report = judge(hang_item(), [Observation(result, hang_proof=proven_hang(result))])
    assert report.verdict is Verdict.PASS, report.problems
    assert any("hang proven by the ranks' stacks" in note for note in report.notes)


def test_an_unclaimed_hang_says_where_each_rank_was_stuck():
    item = predict_item()  # outcomes that print, none that hangs
    report = judge(item, [Observation(timed_out(IDLE_IN_ALL_REDUCE, IDLE_IN_BARRIER))])
    # No claim about the run as a whole: each printing rank's claim that it returns is what
    # fails, and says where that rank was stuck.
    blocked = [p for p in report.problems if "blocked at the time limit" in p]
    assert any("rank 0" in p and "stuck at line 4, `dist.all_reduce`" in p for p in blocked)
    assert any("rank 1" in p and "stuck at line 6, `dist.barrier`" in p for p in blocked)
    assert describe_rank(timed_out(IDLE_IN_BARRIER).ranks[0]).endswith(
        "stuck at line 6, `dist.barrier`"
    )

"""Runs the executor spoiled are recognised, run again, and never judged as the snippet's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from app.challenges.loader import load_path
from app.executor_client import RunEvent
from app.verification import batch, infra
from app.verification import service as verification
from app.verification.rules import Verdict
from executor.contract import ExceptionInfo, RankResult, RunRequest, RunResult
from tests.conftest import TEST_CHALLENGES
from tests.support.fake_executor import FakeExecutor, canned_result

LOST = "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [::1]:4132"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/run/snippet.py", line 3, in <module>\n'
    '    dist.init_process_group("gloo")\n'
    '  File ".../distributed_c10d.py", line 1710, in init_process_group\n'
    "    default_pg, _ = _new_process_group_helper(\n"
    f"torch.distributed.DistBackendError: {LOST}\n"
)


def lost_at_init(**peer: object) -> RunResult:
    """A 2-rank run whose rank 0 lost its connection in init_process_group; rank 1 as given."""
    lost = RankResult(
        rank=0,
        status="error",
        exit_code=1,
        stderr=TRACEBACK,
        exception=ExceptionInfo(type="DistBackendError", message=LOST, bases=["RuntimeError"]),
    )
    other = RankResult(**{"rank": 1, "status": "killed", "exit_code": -15, **peer})
    return RunResult(status="error", duration_ms=900, ranks=[lost, other])


def test_a_rank_lost_at_rendezvous_with_its_peer_stopped_is_the_executors():
    assert "lost its connection" in (infra.executor_fault(lost_at_init()) or "")


def test_a_healthy_run_or_one_the_snippet_broke_is_not_the_executors():
    assert infra.executor_fault(canned_result("1\n", "1\n")) is None
    # The peer failed by itself: whatever rank 0 saw, the snippet is to blame.
    own = ExceptionInfo(type="ValueError", message="bad shape")
    assert infra.executor_fault(lost_at_init(status="error", exit_code=1, exception=own)) is None
    # The same words raised by the snippet's own code, not at rendezvous.
    run = lost_at_init()
    run.ranks[0].stderr = TRACEBACK.replace("in init_process_group", "in all_reduce")
    assert infra.executor_fault(run) is None


def test_a_rank_whose_setup_failed_in_the_executor_is_the_executors():
    rank = RankResult(
        rank=1, status="error", exit_code=70, stderr="ranklab: rank setup failed: OSError()\n"
    )
    run = RunResult(status="error", duration_ms=5, ranks=[rank])
    assert "set-up" in (infra.executor_fault(run) or "")


@dataclass
class SpoilingExecutor(FakeExecutor):
    """Its first `spoiled` runs lose rank 0 at rendezvous; the rest are healthy."""

    spoiled: int = 1

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        if self.spoiled > 0:
            self.spoiled -= 1
            self.requests.append(request)
            yield lost_at_init()
            return
        yield from super().stream(request)


def _runs_item():
    loaded = load_path(TEST_CHALLENGES / "runs").sets[0]
    return loaded, loaded.challenge_set.items[0]


def test_a_spoiled_run_is_run_again_and_never_judged():
    loaded, item = _runs_item()
    executor = SpoilingExecutor(spoiled=2)
    report = verification.verify_item(executor, loaded, item, repeats=3, cuda_devices=0)
    assert report.verdict is Verdict.PASS, report.problems
    assert len(report.observations) == 3
    assert all(o.result.status.value == "ok" for o in report.observations)
    assert len(executor.requests) == 5  # 3 healthy runs, 2 spoiled ones run again


def test_an_executor_that_spoils_every_try_fails_the_item_as_its_own_failure():
    loaded, item = _runs_item()
    executor = SpoilingExecutor(spoiled=100)
    verified = batch.verify_timed(executor, loaded, item, 3, batch.ExecutorFacts())
    report = verified.report
    assert report.verdict is Verdict.FAIL and report.executor_failed
    assert report.observations == []  # no run is shown as what the snippet does
    assert "the executor failed 3 tries" in report.problems[0]
    assert len(executor.requests) == verification.EXECUTOR_FAULT_TRIES

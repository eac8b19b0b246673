"""Verifying many items at once through a fake executor: concurrent, yet reported in order."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from app.challenges.loader import LoadedSet, load_path
from app.executor_client import RunEvent
from app.verification import batch
from executor.contract import RunRequest
from tests.conftest import TEST_CHALLENGES
from tests.support.fake_executor import FakeExecutor


@dataclass
class MeetingExecutor(FakeExecutor):
    """Each run waits until `parties` runs are in progress at once (or gives up)."""

    parties: int = 2
    barrier: threading.Barrier = field(init=False)

    def __post_init__(self) -> None:
        self.barrier = threading.Barrier(self.parties, timeout=10)

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        self.barrier.wait()  # raises BrokenBarrierError when runs do not overlap
        yield from super().stream(request)


def many_items(count: int) -> LoadedSet:
    """The test-runs set with its executable item copied `count` times under new ids."""
    runs = load_path(TEST_CHALLENGES / "runs").sets[0]
    first = runs.challenge_set.items[0]
    copies = [first.model_copy(update={"id": f"copy-{n}"}) for n in range(count)]
    code = {item.id: runs.code[first.id] for item in copies}
    return LoadedSet(runs.challenge_set.model_copy(update={"items": copies}), runs.path, code)


def test_jobs_run_items_at_the_same_time_and_report_them_in_item_order():
    loaded = many_items(4)
    executor = MeetingExecutor(parties=2)
    results = list(batch.verify_in_order(executor, [loaded], repeats=1, jobs=2))
    assert [verified.item.id for verified in results] == ["copy-0", "copy-1", "copy-2", "copy-3"]
    assert {verified.report.verdict.value for verified in results} == {"pass"}
    assert all(verified.duration_ms >= 0 for verified in results)


def test_one_job_at_a_time_runs_items_one_after_another():
    loaded = many_items(3)
    results = list(batch.verify_in_order(FakeExecutor(), [loaded], repeats=2, jobs=1))
    assert [verified.report.verdict.value for verified in results] == ["pass"] * 3
    assert len(results[0].content_hash) == 64
    assert results[0].content_hash != results[1].content_hash  # the id is part of the content

"""Staff verification jobs: one per key at a time, progress item by item, results recorded."""

from __future__ import annotations

import threading

import pytest
from sqlmodel import Session, select

from app.challenges.loader import LoadedSet, load_path
from app.db import make_engine
from app.verification import jobs
from app.verification.incremental import Selection
from app.verification.jobs import JobRegistry, VerifyJob
from app.verification.models import VerificationRecord
from tests.conftest import TEST_CHALLENGES
from tests.support.fake_executor import GatedExecutor

WAIT_S = 10


@pytest.fixture
def two_items() -> LoadedSet:
    """The test-runs set with its one executable item twice (under two ids)."""
    loaded = load_path(TEST_CHALLENGES / "runs").sets[0]
    first = loaded.challenge_set.items[0]
    second = first.model_copy(update={"id": "all-reduce-again"})
    items = {"items": [first, second]}
    code = {**loaded.code, second.id: loaded.code[first.id]}
    return LoadedSet(loaded.challenge_set.model_copy(update=items), loaded.path, code)


def test_a_second_start_for_the_same_key_joins_the_running_job():
    registry = JobRegistry()
    gate = threading.Event()

    def work(job: VerifyJob) -> None:
        assert gate.wait(WAIT_S)

    first, started = registry.start(("a-set", None), ["x"], work)
    again, started_again = registry.start(("a-set", None), ["x"], work)
    assert started and not started_again and again is first
    other, started_other = registry.start(("a-set", "x"), ["x"], work)
    assert started_other and other is not first  # one item of the set is another job
    gate.set()
    assert first.wait(WAIT_S) and other.wait(WAIT_S)
    after, started_after = registry.start(("a-set", None), ["x"], work)
    assert started_after and after is not first and registry.get(("a-set", None)) is after
    assert after.wait(WAIT_S)


def test_each_item_goes_from_pending_to_running_to_its_verdict(two_items, sqlite_url):
    executor = GatedExecutor()
    engine = make_engine(sqlite_url)
    selection = Selection(sets=[two_items])
    job = jobs.verify_in_background(
        JobRegistry(), executor, ("test-runs", None), selection, [], engine, repeats=2
    )
    assert executor.entered.wait(WAIT_S)
    assert [(entry.item_id, entry.state) for entry in job.progress()] == [
        ("all-reduce", "running"),
        ("all-reduce-again", "pending"),
    ]
    assert not job.done
    executor.gate.set()
    assert job.wait(WAIT_S) and job.error is None
    progress = job.progress()
    assert [entry.state for entry in progress] == ["pass", "pass"]
    assert progress[0].report is not None and len(progress[0].report.observations) == 2
    with Session(engine) as session:
        stored = session.exec(select(VerificationRecord)).all()
    engine.dispose()
    assert sorted(record.item_id for record in stored) == ["all-reduce", "all-reduce-again"]
    assert {record.torch for record in stored} == {"2.13.0+cpu"}


def test_a_job_that_breaks_finishes_and_says_why():
    def work(job: VerifyJob) -> None:
        job.mark_running("x")
        raise RuntimeError("the disk is on fire")

    job, _started = JobRegistry().start(("a-set", None), ["x"], work)
    assert job.wait(WAIT_S)
    assert job.error == "RuntimeError: the disk is on fire"

"""The timed challenge over HTTP, on SQLite and PostgreSQL: start to badge, refusals, no leaks."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.db import make_engine
from tests.conftest import FIXTURES
from tests.support.learner import Learner

SECRETS = ("KEY-EXPLANATION", "FEEDBACK-")
QUICK = FIXTURES / "quick"


def test_a_learner_takes_the_set_and_earns_the_badge(learner, clock):
    attempt = learner.start("test-basics")
    page = learner.get(f"{attempt}/q/1")
    assert "World size" in page.text and 'role="timer"' in page.text
    assert learner.answer(attempt, 1, "B").status_code == 303
    closed = learner.get(f"{attempt}/q/1").text
    assert "✓ Correct" in closed and "KEY-EXPLANATION-WORLD" in closed and "FEEDBACK-B" in closed
    learner.next(attempt)
    clock.advance(20)
    assert learner.answer(attempt, 2, "3.33").status_code == 303
    assert learner.next(attempt).headers["location"] == f"{attempt}/results"  # straight there
    results = learner.get(f"{attempt}/results").text
    assert "2 / 2 correct" in results and "Badge earned: Test Badge" in results
    progress = learner.get("/me/progress").text
    assert "Test Badge" in progress
    assert 'data-testid="status">Badge earned' in learner.get("/topics/collectives").text


def test_a_wrong_answer_then_a_right_one_is_correct_but_a_third_is_refused(learner):
    attempt = learner.start("test-basics")
    learner.answer(attempt, 1, "A")
    retry = learner.get(f"{attempt}/q/1").text
    assert "Attempts: 1 left" in retry and "FEEDBACK-A-WORLD" in retry
    assert "KEY-EXPLANATION" not in retry and "FEEDBACK-B" not in retry
    learner.answer(attempt, 1, "C")
    third = learner.answer(attempt, 1, "B")
    assert third.status_code == 409
    assert "already closed" in third.text
    assert "✗ Incorrect" in learner.get(f"{attempt}/q/1").text


def test_a_late_answer_is_refused_and_recorded_as_a_timeout(learner, clock):
    attempt = learner.start("test-basics")
    clock.advance(60 + 3 + 1)  # limit 60 s, grace 3 s
    late = learner.answer(attempt, 1, "B")
    assert late.status_code == 409 and "Time is up" in late.text
    page = learner.get(f"{attempt}/q/1").text
    assert "Time's up" in page and "KEY-EXPLANATION-WORLD" in page


def test_an_answer_inside_the_grace_period_counts(learner, clock):
    attempt = learner.start("test-basics")
    clock.advance(62)
    assert learner.answer(attempt, 1, "B").status_code == 303


def test_the_browser_timer_expiry_closes_the_question_only_when_the_server_agrees(learner, clock):
    attempt = learner.start("test-basics")
    early = learner.post(f"{attempt}/q/1/expire", follow_redirects=False)
    assert early.headers["location"] == f"{attempt}/q/1"  # not yet: still answerable
    clock.advance(62)  # past the deadline but inside the grace: an answer may still arrive
    inside_grace = learner.post(f"{attempt}/q/1/expire", follow_redirects=False)
    assert inside_grace.headers["location"] == f"{attempt}/q/1"
    clock.advance(2)
    closed = learner.post(f"{attempt}/q/1/expire")
    # The learner is told: time's up, the key and the explanation, then Next moves on.
    assert closed.url.path == f"{attempt}/q/1"
    assert "Time's up" in closed.text
    assert 'data-testid="key-mark"' in closed.text and 'data-testid="explanation"' in closed.text
    assert learner.get(attempt).url.path == f"{attempt}/q/1"  # still there until Next
    learner.next(attempt)
    assert learner.get(attempt).url.path == f"{attempt}/q/2"


def test_no_key_feedback_or_explanation_reaches_the_browser_before_answering(learner):
    attempt = learner.start("test-basics")
    html = learner.get(f"{attempt}/q/1").text
    as_json = learner.get(f"/api{attempt}/q/1").text
    for secret in SECRETS:
        assert secret not in html
        assert secret not in as_json
    assert "key-mark" not in html
    assert "answer" not in json.loads(as_json)["question"]


def test_the_hint_is_given_on_demand_and_recorded(learner, app_factory):
    attempt = learner.start("test-basics")
    assert "Count the processes" not in learner.get(f"{attempt}/q/1").text
    fragment = learner.post(f"{attempt}/q/1/hint", headers={"HX-Request": "true"})
    assert "Count the processes" in fragment.text
    assert "Count the processes" in learner.get(f"{attempt}/q/1").text


def test_no_hint_for_a_question_that_is_not_open(app_factory, database_url):
    with TestClient(app_factory(database_url, challenges_dir=QUICK)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-quick")
        refused = learner.post(f"{attempt}/q/2/hint")  # not shown yet
        assert refused.status_code == 409 and "open questions" in refused.text


def test_questions_cannot_be_skipped_or_seen_before_they_open(learner):
    attempt = learner.start("test-basics")
    assert learner.get(f"{attempt}/q/2", follow_redirects=False).headers["location"] == attempt
    assert learner.get(f"/api{attempt}/q/2").status_code == 404
    early = learner.answer(attempt, 2, "3.33")
    assert early.status_code == 409 and "not open" in early.text
    assert (
        learner.post(f"{attempt}/q/2/expire", follow_redirects=False).headers["location"] == attempt
    )
    refused = learner.next(attempt)
    assert refused.status_code == 409


def test_resuming_keeps_the_clock_running_from_the_server_start(learner, clock):
    attempt = learner.start("test-basics")
    clock.advance(45)
    assert learner.start("test-basics") == attempt  # resumed, not restarted
    state = learner.get(f"/api{attempt}/q/1").json()
    assert state["seconds_left"] == pytest.approx(15)


def test_parallel_submissions_never_use_more_attempts_than_allowed(learner, database_url):
    attempt = learner.start("test-basics")

    def submit(_: int) -> int:
        return learner.answer(attempt, 1, "A").status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(submit, range(12)))
    assert statuses.count(303) == 2, statuses
    assert all(status == 409 for status in statuses if status != 303), statuses
    engine = make_engine(database_url)
    with Session(engine) as session:
        row = session.exec(select(ItemAttempt).where(ItemAttempt.position == 0)).one()
        submissions = session.exec(select(Submission)).all()
    engine.dispose()
    assert row.attempts_used == 2 and len(submissions) == 2


def test_another_learners_attempt_is_not_found(learner, app_factory, database_url):
    attempt = learner.start("test-basics")
    with TestClient(app_factory(database_url)) as other_client:
        other = Learner(other_client)
        other.start_as_guest()
        assert other.get(f"{attempt}/q/1").status_code == 404
        assert other.answer(attempt, 1, "B").status_code == 404


def test_parallel_starts_make_one_active_attempt(learner, database_url):
    def start(_: int) -> tuple[int, str | None]:
        response = learner.post("/sets/test-basics/start", follow_redirects=False)
        return response.status_code, response.headers.get("location")

    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(start, range(12)))
    assert {status for status, _ in responses} == {303}
    assert len({location for _, location in responses}) == 1  # everyone is sent to the same one
    engine = make_engine(database_url)
    with Session(engine) as session:
        active = session.exec(select(SetAttempt).where(col(SetAttempt.finished_at).is_(None)))
        assert len(active.all()) == 1
    engine.dispose()

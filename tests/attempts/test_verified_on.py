"""The learner page says where a revealed key was proven, only for the content as it is now."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.db import make_engine
from app.verification import evidence, records
from app.verification.rules import ItemReport, Observation, Verdict
from tests.support.fake_executor import FakeExecutor, canned_result
from tests.support.learner import Learner

LINE = "Verified on torch 2.13.0+cpu, gloo, 2 ranks, 2026-11-23"


@pytest.fixture
def app(app_factory, sqlite_url):
    return app_factory(sqlite_url, executor=FakeExecutor())


@pytest.fixture
def learner(app):
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        yield learner


def record(app, sqlite_url: str, verdict: Verdict, digest: str | None = None, hour: int = 9):
    """Store a verification of the test-runs item (for its current content unless told)."""
    loaded = app.state.catalog.get("test-runs")
    item = loaded.challenge_set.items[0]
    digest = digest or evidence.item_hash(loaded, item)
    report = ItemReport(
        item.id, verdict, observations=[Observation(canned_result("1.0\n", "1.0\n"))]
    )
    engine = make_engine(sqlite_url)
    with Session(engine) as session:
        when = datetime(2026, 11, 23, hour, 0, tzinfo=UTC)
        records.save(session, "test-runs", digest, report, 300, when)
    engine.dispose()


def test_a_proven_key_shows_where_it_was_verified_once_revealed(app, learner, sqlite_url):
    record(app, sqlite_url, Verdict.PASS)
    attempt = learner.start("test-runs")
    assert LINE not in learner.get(f"{attempt}/q/1").text  # the key is not shown yet
    learner.answer(attempt, 1, "B")
    learner.answer(attempt, 1, "B")  # wrong twice: closed, the key is revealed
    page = learner.get(f"{attempt}/q/1").text
    assert 'data-testid="key-mark"' in page
    assert f'data-testid="verified-on">✓ {LINE}</p>' in page


def test_a_record_of_older_content_shows_nothing(app, learner, sqlite_url):
    record(app, sqlite_url, Verdict.PASS, digest="the-item-before-an-edit")
    attempt = learner.start("test-runs")
    learner.answer(attempt, 1, "A")
    page = learner.get(f"{attempt}/q/1").text
    assert "✓ Correct" in page and "Verified on" not in page


def test_a_later_failure_withdraws_the_line(app, learner, sqlite_url):
    record(app, sqlite_url, Verdict.PASS, hour=9)
    record(app, sqlite_url, Verdict.FAIL, hour=10)
    attempt = learner.start("test-runs")
    learner.answer(attempt, 1, "A")
    assert "Verified on" not in learner.get(f"{attempt}/q/1").text


def test_items_with_nothing_to_run_never_show_the_line(learner):
    attempt = learner.start("test-basics")
    learner.answer(attempt, 1, "B")
    page = learner.get(f"{attempt}/q/1").text
    assert "✓ Correct" in page and "Verified on" not in page

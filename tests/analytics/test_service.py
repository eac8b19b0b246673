"""The queries on SQLite and PostgreSQL: the fixture dataset, taken through the real services,
gives the statistics worked out by hand in test_rules.py."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from sqlmodel import Session

from app.analytics import rules
from app.analytics import service as analytics
from app.challenges.catalog import Catalog
from app.db import make_engine
from app.errors import NotFound
from tests.analytics import dataset


@pytest.fixture
def session(database_url: str, clock) -> Session:
    dataset.build(database_url, clock)
    engine = make_engine(database_url)
    with Session(engine) as opened:
        yield opened
    engine.dispose()


@pytest.fixture
def catalog() -> Catalog:
    return Catalog.load(dataset.FIXTURES)


def test_item_records_come_from_finished_attempts_only(session):
    records = analytics.item_records(session, dataset.SET_ID)
    assert len(records) == 15  # five finished attempts × three questions; fay's is left out
    assert {record.attempt_id for record in records} == {1, 2, 3, 4, 5}


def test_the_statistics_match_the_hand_computed_values(session, catalog):
    rows = {
        row.statistics.item_id: row
        for row in analytics.item_rows(session, catalog, "test-analysis")
    }
    q1, q2, q3 = (rows[item].statistics for item in ("q1", "q2", "q3"))
    assert (q1.facility, q2.facility, q3.facility) == (80.0, 60.0, 40.0)
    assert q1.discrimination == 0.0
    assert q2.discrimination == pytest.approx(-300 / 84**0.5)
    assert q3.discrimination == pytest.approx(100 / 6)
    assert (q1.mean_seconds, q2.mean_seconds, q3.mean_seconds) == (30.0, 32.0, 22.0)
    assert (q1.timeouts, q2.timeouts, q3.timeouts) == (0, 1, 2)
    assert (q1.hints, q2.hints, q3.hints) == (2, 1, 0)
    assert q1.option_counts == {"A": 4, "B": 1, "C": 0}
    assert q2.option_counts == {"A": 5, "B": 2, "C": 3, "D": 0}
    assert q3.option_counts == {"4.0": 2, "5.0": 1}
    assert rows["q2"].key == frozenset({"A", "C"}) and rows["q2"].title == "Two answers"


def test_the_set_and_the_days_are_summarised(session, catalog):
    [row] = analytics.set_rows(session, catalog)
    assert (row.set_id, row.title) == ("test-analysis", "Item analysis")
    assert (row.summary.attempts, row.summary.completions, row.summary.badges) == (6, 5, 1)
    assert (row.summary.badge_rate, row.summary.mean_score) == (20.0, pytest.approx(60.0))
    days = rules.daily_activity(analytics.attempt_records(session))
    assert [(d.day, d.started, d.completed, d.badges) for d in days] == [
        (date(2026, 11, 22), 3, 3, 1),
        (date(2026, 11, 23), 0, 0, 0),
        (date(2026, 11, 24), 3, 2, 0),
    ]
    assert analytics.learner_count(session) == 6


def test_a_set_no_longer_served_keeps_its_history(session, tmp_path: Path):
    empty = Catalog.load(tmp_path)
    [row] = analytics.set_rows(session, empty)
    assert row.title == "Item analysis" and row.summary.attempts == 6
    items = analytics.item_rows(session, empty, "test-analysis")
    assert [(item.statistics.item_id, item.kind) for item in items] == [
        ("q1", "removed"),
        ("q2", "removed"),
        ("q3", "removed"),
    ]
    assert analytics.set_title(session, empty, "test-analysis") == "Item analysis"


def test_an_unknown_set_or_user_is_not_found(session, catalog):
    with pytest.raises(NotFound):
        analytics.item_rows(session, catalog, "no-such-set")
    with pytest.raises(NotFound):
        analytics.set_title(session, catalog, "no-such-set")
    with pytest.raises(NotFound):
        analytics.user_or_404(session, 999)

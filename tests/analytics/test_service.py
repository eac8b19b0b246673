"""The queries on SQLite and PostgreSQL: the fixture dataset, taken through the real services,
gives the statistics worked out by hand in test_rules.py."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, col, delete

from app.analytics import rules
from app.analytics import service as analytics
from app.attempts.models import ItemSighting
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


def dataset_catalog() -> Catalog:
    return Catalog.load(dataset.FIXTURES)


@pytest.fixture
def catalog() -> Catalog:
    return dataset_catalog()


def test_the_database_adds_up_the_hand_computed_sums_of_finished_attempts_only(session):
    totals = analytics.item_totals(session, dataset.SET_ID)
    # The dataset's attempts started before versions: their version is None.
    q1, q2, q3 = (totals[(dataset.SET_ID, None, item)] for item in ("q1", "q2", "q3"))
    # n, Σx, Σy, Σxy, Σy² as in test_rules.py: five finished attempts, fay's is left out.
    assert (q1.attempts, q1.correct, q1.rest, q1.correct_times_rest, q1.rest_squared) == (
        5,
        4,
        5,
        4,
        7,
    )
    assert (q2.correct, q2.rest, q2.correct_times_rest, q2.rest_squared) == (3, 6, 3, 10)
    assert (q3.correct, q3.rest, q3.correct_times_rest, q3.rest_squared) == (2, 7, 3, 11)
    # A time-out counts as the question's limit (bob's q3 at 40 s, limit 30), not the gap.
    assert (q1.seconds, q2.seconds, q3.seconds) == (150.0, 160.0, 110.0)
    answers = analytics.answer_counts(session, dataset.SET_ID)
    assert q2.credit == pytest.approx(2 + 2 / 3)  # bob's second-try right scores ⅔
    assert answers[(dataset.SET_ID, None, "q2")] == {"A,C": 3, "B": 1, "A": 1, "A,B": 1}


def test_the_statistics_match_the_hand_computed_values(session, catalog):
    rows = {
        row.statistics.item_id: row
        for row in analytics.item_rows(session, catalog, "test-analysis")
    }
    q1, q2, q3 = (rows[item].statistics for item in ("q1", "q2", "q3"))
    assert (q1.facility, q2.facility, q3.facility) == (80.0, pytest.approx(160 / 3), 40.0)
    # Right at the first try: q2's bob got it at his second (and cy never), so 2 of 5.
    assert (q1.first_try_facility, q2.first_try_facility, q3.first_try_facility) == (
        80.0,
        40.0,
        40.0,
    )
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
    # The mean of the scores the results pages showed: 100, 56, 67, 33, 33 (bob's second try
    # on q2 scores ⅔).
    assert (row.summary.badge_rate, row.summary.mean_score) == (20.0, pytest.approx(57.8))
    days = analytics.daily_activity(session)
    assert [(d.day, d.started, d.completed, d.badges) for d in days] == [
        (date(2026, 11, 22), 3, 3, 1),
        (date(2026, 11, 23), 0, 0, 0),
        (date(2026, 11, 24), 3, 2, 0),
    ]
    assert analytics.learner_count(session) == 6
    assert analytics.overview_totals(session) == {
        "learners": 6,
        "attempts": 6,
        "completions": 5,
        "badges": 1,
    }


def test_a_badge_earned_again_is_awarded_once_on_the_first_day(database_url, clock):
    ids = dataset.build(database_url, clock)
    ada = dataset.LEARNERS[0]
    again = dataset.Learner("ada", dataset.DAY_THREE + timedelta(hours=5), ada.questions)
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        # A retake earns a badge again only on questions not seen before (fresh variants):
        # as if it showed such, her first sightings are forgotten.
        session.execute(delete(ItemSighting).where(col(ItemSighting.user_id) == ids["ada"]))
        session.commit()
        dataset.take(session, ids["ada"], dataset.analysis_set(), clock, again)
        assert analytics.overview_totals(session)["badges"] == 1
        assert [day.badges for day in analytics.daily_activity(session)] == [1, 0, 0]
        [(person, summary)] = analytics.learner_rows(session, ids["ada"])
        assert (person.username, summary.attempts, summary.completions) == ("ada", 2, 2)
        assert (summary.badges, summary.mean_score) == (1, 100.0)
        [row] = analytics.set_rows(session, dataset_catalog(), user_id=ids["ada"])
        assert (row.summary.attempts, row.summary.badges, row.summary.best_score) == (2, 2, 100.0)
    engine.dispose()


def test_every_learner_is_listed_with_the_summary_of_their_attempts(session):
    rows = {person.username: summary for person, summary in analytics.learner_rows(session)}
    assert (rows["bob"].attempts, rows["bob"].completions, rows["bob"].badges) == (1, 1, 0)
    assert rows["bob"].mean_score == 56.0  # his results page: (1 + ⅔ + 0) / 3 = 56 %
    assert (rows["fay"].attempts, rows["fay"].completions, rows["fay"].mean_score) == (1, 0, None)
    assert rows["fay"].last_active == dataset.DAY_THREE + timedelta(minutes=6, seconds=50)


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


def test_an_item_whose_facility_contradicts_its_label_is_flagged_from_20_answers(session, catalog):
    # q1 is labelled beginner: 5 of 20 right (25 %) contradicts it; 5 of 19 is too few to say.
    def flag(attempts: int) -> str | None:
        totals = {
            ("test-analysis", None, "q1"): rules.ItemTotals("q1", attempts, 5, 0, 0, 0, credit=5.0)
        }
        rows = analytics.item_rows(session, catalog, "test-analysis", totals, {})
        return rows[0].statistics.label_mismatch

    assert flag(20) == "labelled beginner, but its facility is 25 % (under 30 %)"
    assert flag(19) is None

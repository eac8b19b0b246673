"""The pure class rules: windows, the late rule, due phrases, roster rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from app.classes import rules

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)  # a Sunday
WINDOW = rules.Window(NOW, NOW + timedelta(days=5), NOW + timedelta(days=8))


def test_a_start_is_refused_before_opening_after_closing_and_past_the_limit():
    assert "opens" in (rules.start_refusal(WINDOW, NOW - timedelta(seconds=1), 0, None) or "")
    assert "closed" in (rules.start_refusal(WINDOW, WINDOW.close_at, 0, None) or "")
    assert "all 2 attempts" in (rules.start_refusal(WINDOW, NOW, 2, 2) or "")
    assert rules.start_refusal(WINDOW, NOW, 1, 2) is None


def test_late_work_loses_the_penalty_for_each_day_or_part_of_one_until_close():
    due = WINDOW.due_at
    assert rules.late_factor(WINDOW, due, 10) == 1.0
    assert rules.late_factor(WINDOW, due + timedelta(minutes=1), 10) == 0.9
    assert rules.late_factor(WINDOW, due + timedelta(days=1, minutes=1), 10) == 0.8
    assert rules.late_factor(WINDOW, due + timedelta(minutes=1), 100) == 0.0
    assert rules.late_factor(WINDOW, WINDOW.close_at + timedelta(seconds=1), 0) == 0.0


def test_the_due_phrase_names_the_weekday_in_the_learners_zone():
    friday = datetime(2026, 11, 27, 17, 0, tzinfo=UTC)
    assert rules.due_phrase(friday, NOW, UTC) == "due Friday 17:00"
    # 17:00 UTC is already Saturday 02:00 in Tokyo.
    assert rules.due_phrase(friday, NOW, ZoneInfo("Asia/Tokyo")) == "due Saturday 02:00"
    assert rules.due_phrase(NOW + timedelta(hours=2), NOW, UTC) == "due today 11:00"
    assert rules.due_phrase(NOW - timedelta(days=1), NOW, UTC).startswith("was due")


def test_roster_rows_report_every_bad_row_by_line():
    rows, errors = rules.roster_rows(
        [
            {"email": "ana@example.edu", "student id": "S1", "name": "Ana"},
            {"email": "not-an-email"},
            {"username": "x"},
            {"email": "ana@example.org"},
        ]
    )
    assert [row.username for row in rows] == ["ana"]
    assert errors[0].startswith("line 3:") and errors[1].startswith("line 4:")
    assert "appears twice" in errors[2] and errors[2].startswith("line 5:")


def allow(multiplier, due_days, close_days, source):
    day = lambda n: None if n is None else NOW + timedelta(days=n)  # noqa: E731
    return rules.Allowance(multiplier, day(due_days), day(close_days), source)


def test_a_learners_own_extension_wins_whole_over_their_groups():
    own = allow(1.0, 6, None, "own")
    groups = [allow(2.0, 9, 12, "accessibility")]
    assert rules.allowance(own, groups) == own
    assert rules.allowance(None, []) is None


def test_among_groups_the_latest_dates_and_the_largest_multiplier_count():
    found = rules.allowance(
        None, [allow(1.5, 6, None, "lab B"), allow(1.0, 9, 10, "accessibility")]
    )
    assert found == rules.Allowance(
        1.5, NOW + timedelta(days=9), NOW + timedelta(days=10), "group accessibility, lab B"
    )
    assert found is not None and found.from_groups
    untimed = rules.allowance(None, [allow(None, None, None, "a"), allow(3.0, None, None, "b")])
    assert untimed is not None and untimed.time_multiplier is None


def test_the_accounts_accommodation_counts_when_it_is_more_generous():
    assert rules.more_time(2.0, allow(1.5, None, None, "group a")) == 2.0
    assert rules.more_time(1.0, allow(1.5, None, None, "own")) == 1.5
    assert rules.more_time(None, allow(1.5, None, None, "own")) is None
    assert rules.more_time(2.0, allow(None, None, None, "own")) is None
    assert rules.more_time(2.0, None) == 2.0


def test_a_status_is_submitted_by_the_work_then_missing_after_close():
    due, close = WINDOW.due_at, WINDOW.close_at
    assert rules.status(WINDOW, NOW, False, None) is rules.Status.NOT_STARTED
    assert rules.status(WINDOW, NOW, True, None) is rules.Status.IN_PROGRESS
    assert rules.status(WINDOW, close, True, due) is rules.Status.ON_TIME
    assert rules.status(WINDOW, close, True, due + timedelta(seconds=1)) is rules.Status.LATE
    assert rules.status(WINDOW, close, True, None) is rules.Status.MISSING


def test_a_topic_scores_the_mean_of_its_parts_and_is_in_when_every_part_is():
    done = NOW + timedelta(days=1)
    parts = [
        rules.TopicPart("lesson", 100.0, True, done),
        rules.TopicPart("labs", 50.0, True, None),
        rules.TopicPart("set", 0.0, False, None),
    ]
    assert rules.topic_score(parts) == 50.0
    assert rules.topic_submitted_at(parts) is None
    assert rules.topic_score([rules.TopicPart("set", 0.0, False, None)]) is None
    finished = [rules.TopicPart("lesson", 100.0, True, done), rules.TopicPart("set", 80, True, NOW)]
    assert rules.topic_submitted_at(finished) == done


def test_a_due_date_is_due_then_overdue_then_closed():
    assert rules.due_state(WINDOW, NOW) is rules.DueState.DUE
    assert rules.due_state(WINDOW, WINDOW.due_at + timedelta(minutes=1)) is rules.DueState.OVERDUE
    assert rules.due_state(WINDOW, WINDOW.close_at) is rules.DueState.CLOSED

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

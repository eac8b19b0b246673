"""Item statistics checked against values worked out by hand on the fixture dataset.

The dataset (tests/analytics/dataset.py drives it through the real services) is five finished
attempts at three questions, plus one unfinished attempt that must count for nothing:

    score (1 = correct)   q1  q2  q3  total   seconds open  q1  q2  q3
    ada                    1   1   1    3                   10  20  10
    bob                    1   1   0    2                   20  30  30 (timed out at 40, limit 30)
    cy                     1   0   1    2                   30  40  20
    dee                    0   1   0    1                   40  10  20
    eve                    1   0   0    1                   50  60  30 (timed out at 70 and 100)

Facility index = 100 × mean item score:  q1 4/5 = 80.0   q2 3/5 = 60.0   q3 2/5 = 40.0

Discrimination index = 100 × r(x, y), x the item score, y = total − x (the rest of the test),
r = (nΣxy − ΣxΣy) / √((nΣx² − (Σx)²)(nΣy² − (Σy)²)), n = 5:

    q1  x = 1 1 1 0 1   y = 2 1 1 1 0   Σx 4  Σy 5  Σxy 4  Σx² 4  Σy² 7
        numerator 5·4 − 4·5 = 0                         → r = 0           → 0.0
    q2  x = 1 1 0 1 0   y = 2 1 2 0 1   Σx 3  Σy 6  Σxy 3  Σx² 3  Σy² 10
        (15 − 18) / √((15 − 9)(50 − 36)) = −3 / √84     → r = −0.32733    → −32.7
    q3  x = 1 0 1 0 0   y = 2 2 1 1 1   Σx 2  Σy 7  Σxy 3  Σx² 2  Σy² 11
        (15 − 14) / √((10 − 4)(55 − 49)) = 1 / 6        → r = 0.16667     → 16.7

Mean time:  q1 (10+20+30+40+50)/5 = 30.0   q2 (20+30+40+10+60)/5 = 32.0
            q3 (10+30+20+20+30)/5 = 22.0   (a time-out counts as its limit, not the gap).
Time-outs: q1 0, q2 1 (eve), q3 2 (bob, eve).   Hints: q1 2 (ada, dee), q2 1 (bob), q3 0.
Options chosen, every submission counted, "A,C" for A and for C:
    q1  ada A, bob A, cy A, dee B, eve A                     → A 4, B 1, C 0
    q2  ada A,C; bob B then A,C; cy A then A,B; dee A,C     → A 5, B 2, C 3, D 0
    q3  ada 4, cy 4, dee 5                                   → 4.0: 2, 5.0: 1
Set: 6 attempts, 5 completions, 1 badge → badge rate 20.0 %; mean score (3+2+2+1+1)/15 = 60.0 %.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from app.analytics import rules
from app.attempts.rules import ItemStatus

T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
OPTIONS = {"q1": ["A", "B", "C"], "q2": ["A", "B", "C", "D"]}
LIMITS = {"q1": 60.0, "q2": 60.0, "q3": 30.0}


def record(attempt: int, item: str, status: ItemStatus, seconds: float, *answers: str, hint=False):
    return rules.ItemRecord(
        attempt_id=attempt,
        item_id=item,
        status=status,
        started_at=T0,
        closed_at=T0 + timedelta(seconds=seconds),
        time_limit_s=LIMITS[item],
        hint_shown=hint,
        answers=answers,
    )


OK, WRONG, TIMEOUT = ItemStatus.CORRECT, ItemStatus.INCORRECT, ItemStatus.TIMED_OUT
FIXTURE = [
    record(1, "q1", OK, 10, "A", hint=True),
    record(1, "q2", OK, 20, "A,C"),
    record(1, "q3", OK, 10, "4.0"),
    record(2, "q1", OK, 20, "A"),
    record(2, "q2", OK, 30, "B", "A,C", hint=True),
    record(2, "q3", TIMEOUT, 40),
    record(3, "q1", OK, 30, "A"),
    record(3, "q2", WRONG, 40, "A", "A,B"),
    record(3, "q3", OK, 20, "4.0"),
    record(4, "q1", WRONG, 40, "B", hint=True),
    record(4, "q2", OK, 10, "A,C"),
    record(4, "q3", WRONG, 20, "5.0"),
    record(5, "q1", OK, 50, "A"),
    record(5, "q2", TIMEOUT, 70),
    record(5, "q3", TIMEOUT, 100),
]


def fixture_statistics() -> dict[str, rules.ItemStatistics]:
    stats = rules.item_statistics(FIXTURE, ["q1", "q2", "q3"], OPTIONS)
    return {item.item_id: item for item in stats}


def test_facility_is_the_mean_item_score_as_a_percentage():
    stats = fixture_statistics()
    assert [stats[item].facility for item in ("q1", "q2", "q3")] == [80.0, 60.0, 40.0]


def test_discrimination_correlates_the_item_with_the_rest_of_the_test():
    stats = fixture_statistics()
    assert stats["q1"].discrimination == 0.0
    assert stats["q2"].discrimination == pytest.approx(-300 / 84**0.5)  # −32.733
    assert stats["q3"].discrimination == pytest.approx(100 / 6)  # 16.667


def test_mean_time_counts_a_time_out_as_the_question_s_limit():
    stats = fixture_statistics()
    assert [stats[item].mean_seconds for item in ("q1", "q2", "q3")] == [30.0, 32.0, 22.0]


def test_time_outs_and_hints_are_counted_per_item():
    stats = fixture_statistics()
    assert [stats[item].timeouts for item in ("q1", "q2", "q3")] == [0, 1, 2]
    assert [stats[item].hints for item in ("q1", "q2", "q3")] == [2, 1, 0]
    assert [stats[item].attempts for item in ("q1", "q2", "q3")] == [5, 5, 5]


def test_every_submission_counts_and_a_multi_answer_counts_for_each_letter():
    stats = fixture_statistics()
    assert stats["q1"].option_counts == {"A": 4, "B": 1, "C": 0}
    assert stats["q2"].option_counts == {"A": 5, "B": 2, "C": 3, "D": 0}
    assert stats["q3"].option_counts == {"4.0": 2, "5.0": 1}  # numeric: the values given


def test_options_are_listed_in_the_set_s_order_even_when_nobody_chose_them():
    assert list(rules.option_counts([], ["A", "B"])) == ["A", "B"]


def test_discrimination_is_undefined_when_everyone_scores_the_same_on_the_item():
    same = [record(n, "q1", OK, 10, "A") for n in (1, 2, 3)]
    assert rules.item_statistics(same, ["q1"])[0].discrimination is None


def test_discrimination_is_undefined_with_fewer_than_two_attempts():
    only = [record(1, "q1", OK, 10, "A"), record(1, "q2", WRONG, 10, "B")]
    stats = rules.item_statistics(only, ["q1", "q2"])
    assert [item.discrimination for item in stats] == [None, None]
    assert stats[0].facility == 100.0


def test_an_item_nobody_finished_has_no_statistics_but_is_listed():
    [empty] = rules.item_statistics([], ["q1"])
    assert (empty.attempts, empty.facility, empty.discrimination, empty.mean_seconds) == (
        0,
        None,
        None,
        None,
    )


def test_an_item_removed_from_the_set_keeps_its_history_after_the_current_items():
    stats = rules.item_statistics(FIXTURE, ["q2", "q1"])
    assert [item.item_id for item in stats] == ["q2", "q1", "q3"]


def test_pearson_matches_a_perfect_and_an_inverse_line():
    assert rules.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert rules.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def attempt(number: int, user: int, day: int, finished: bool, correct: int, badge=False):
    started = T0 + timedelta(days=day)
    return rules.AttemptRecord(
        attempt_id=number,
        user_id=user,
        set_id="test-analysis",
        started_at=started,
        finished_at=started + timedelta(minutes=5) if finished else None,
        correct=correct,
        total=3,
        badge=badge,
    )


ATTEMPTS = [
    attempt(1, 1, 0, True, 3, badge=True),
    attempt(2, 2, 0, True, 2),
    attempt(3, 3, 0, True, 2),
    attempt(4, 4, 2, True, 1),
    attempt(5, 5, 2, True, 1),
    attempt(6, 6, 2, False, 0),
]


def test_a_set_summary_rates_finished_attempts_only():
    summary = rules.set_summary(ATTEMPTS)
    assert (summary.attempts, summary.completions, summary.badges) == (6, 5, 1)
    assert summary.badge_rate == 20.0
    assert summary.mean_score == pytest.approx(60.0)
    assert summary.best_score == 100.0


def test_a_set_nobody_finished_has_no_rates():
    summary = rules.set_summary([attempt(1, 1, 0, False, 0)])
    assert (summary.badge_rate, summary.mean_score, summary.best_score) == (None, None, None)


def test_daily_activity_lists_quiet_days_as_zero():
    days = rules.daily_activity(ATTEMPTS)
    assert [(d.day, d.started, d.completed, d.badges) for d in days] == [
        (date(2026, 11, 22), 3, 3, 1),
        (date(2026, 11, 23), 0, 0, 0),
        (date(2026, 11, 24), 3, 2, 0),
    ]


def test_a_badge_earned_again_is_awarded_once_on_the_first_day():
    again = [*ATTEMPTS, attempt(7, 1, 2, True, 3, badge=True)]
    assert [a.attempt_id for a in rules.first_badges(again)] == [1]
    assert [d.badges for d in rules.daily_activity(again)] == [1, 0, 0]


def test_a_learner_summary_counts_badges_per_set_and_the_last_activity():
    mine = [attempt(1, 1, 0, True, 3, badge=True), attempt(7, 1, 2, True, 2, badge=False)]
    summary = rules.learner_summary(mine)
    assert (summary.attempts, summary.completions, summary.badges) == (2, 2, 1)
    assert summary.mean_score == pytest.approx(100 * 5 / 6)
    assert summary.last_active == T0 + timedelta(days=2, minutes=5)


def test_no_attempts_means_no_days_and_an_empty_summary():
    assert rules.daily_activity([]) == []
    assert rules.learner_summary([]).last_active is None

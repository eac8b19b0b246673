"""Item statistics checked against values worked out by hand on the fixture dataset.

The database adds up the sums below (tests/analytics/test_service.py checks that it does, on
SQLite and PostgreSQL); the rules turn them into statistics.

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

T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
OPTIONS = {"q1": ["A", "B", "C"], "q2": ["A", "B", "C", "D"]}

# The sums of the table above, per item: n, Σx, Σy, Σxy, Σy², then the times to answer (a time-out
# counted as its limit), time-outs and hints; the credit is each item's summed score (bob's q2,
# right at his second try, scores ⅔).
TOTALS = [
    rules.ItemTotals("q1", 5, 4, 5, 4, 7, credit=4.0, timed=5, seconds=150.0, timeouts=0, hints=2),
    rules.ItemTotals(
        "q2", 5, 3, 6, 3, 10, credit=2 + 2 / 3, timed=5, seconds=160.0, timeouts=1, hints=1
    ),
    rules.ItemTotals("q3", 5, 2, 7, 3, 11, credit=2.0, timed=5, seconds=110.0, timeouts=2, hints=0),
]
# How often each answer was submitted.
ANSWERS = {
    "q1": {"A": 4, "B": 1},
    "q2": {"A,C": 3, "B": 1, "A": 1, "A,B": 1},
    "q3": {"4.0": 2, "5.0": 1},
}


def fixture_statistics() -> dict[str, rules.ItemStatistics]:
    stats = rules.item_statistics(TOTALS, ["q1", "q2", "q3"], OPTIONS, ANSWERS)
    return {item.item_id: item for item in stats}


def test_facility_is_the_mean_item_score_as_a_percentage():
    # The item score is the credit the results page gives: q2's second-try right scores ⅔, so
    # its facility is (1 + 1 + ⅔) / 5, not the 3 of 5 right.
    stats = fixture_statistics()
    assert [stats[item].facility for item in ("q1", "q2")] == [80.0, pytest.approx(160 / 3)]
    assert stats["q3"].facility == 40.0


def test_discrimination_correlates_the_item_with_the_rest_of_the_test():
    stats = fixture_statistics()
    assert stats["q1"].discrimination == 0.0
    assert stats["q2"].discrimination == pytest.approx(-300 / 84**0.5)  # −32.733
    assert stats["q3"].discrimination == pytest.approx(100 / 6)  # 16.667


def test_the_sums_give_pearson_s_r_of_the_scores_themselves():
    x, y = [1, 1, 0, 1, 0], [2, 1, 2, 0, 1]  # q2's column of the table
    assert rules.pearson_from_sums(5, 3, 6, 3, 3, 10) == pytest.approx(rules.pearson(x, y))


def test_mean_time_is_the_seconds_over_the_questions_timed():
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
    assert list(rules.option_counts({}, ["A", "B"])) == ["A", "B"]


def test_discrimination_is_undefined_when_everyone_scores_the_same_on_the_item():
    everyone_right = rules.ItemTotals("q1", 3, 3, 2, 2, 2, credit=3.0)  # x = 1 1 1, y = 1 1 0
    assert rules.item_statistics([everyone_right], ["q1"])[0].discrimination is None


def test_discrimination_is_undefined_with_fewer_than_two_attempts():
    only = [
        rules.ItemTotals("q1", 1, 1, 0, 0, 0, credit=1.0),
        rules.ItemTotals("q2", 1, 0, 1, 0, 1),
    ]
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
    stats = rules.item_statistics(TOTALS, ["q2", "q1"])
    assert [item.item_id for item in stats] == ["q2", "q1", "q3"]


def test_pearson_matches_a_perfect_and_an_inverse_line():
    assert rules.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert rules.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


# The set: 6 attempts, 5 finished (scores 100, 66.7, 66.7, 33.3, 33.3 %), 1 badge.
SET_TOTALS = rules.AttemptTotals(6, 5, 1, 1, 100 + 200 / 3 * 2 + 100 / 3 * 2, 100.0)


def test_a_set_summary_rates_finished_attempts_only():
    summary = rules.set_summary(SET_TOTALS)
    assert (summary.attempts, summary.completions, summary.badges) == (6, 5, 1)
    assert summary.badge_rate == 20.0
    assert summary.mean_score == pytest.approx(60.0)
    assert summary.best_score == 100.0


def test_a_set_nobody_finished_has_no_rates():
    summary = rules.set_summary(rules.AttemptTotals(1, 0, 0, 0, 0.0, None))
    assert (summary.badge_rate, summary.mean_score, summary.best_score) == (None, None, None)


def test_daily_activity_lists_quiet_days_as_zero():
    day_one, day_three = date(2026, 11, 22), date(2026, 11, 24)
    days = rules.daily_activity(
        {day_one: 3, day_three: 3}, {day_one: 3, day_three: 2}, {day_one: 1}
    )
    assert [(d.day, d.started, d.completed, d.badges) for d in days] == [
        (date(2026, 11, 22), 3, 3, 1),
        (date(2026, 11, 23), 0, 0, 0),
        (date(2026, 11, 24), 3, 2, 0),
    ]


def test_a_learner_summary_counts_badges_per_set_and_the_last_activity():
    # Two finished attempts at one set (100 % and 66.7 %), the badge earned on the first.
    mine = rules.AttemptTotals(2, 2, 1, 1, 100 + 200 / 3, 100.0)
    summary = rules.learner_summary(mine, T0 + timedelta(days=2, minutes=5))
    assert (summary.attempts, summary.completions, summary.badges) == (2, 2, 1)
    assert summary.mean_score == pytest.approx(100 * 5 / 6)
    assert summary.last_active == T0 + timedelta(days=2, minutes=5)


def test_no_attempts_means_no_days_and_an_empty_summary():
    assert rules.daily_activity({}, {}, {}) == []
    empty = rules.learner_summary(rules.NO_ATTEMPTS, None)
    assert (empty.attempts, empty.mean_score, empty.last_active) == (0, None, None)


@pytest.mark.parametrize(
    ("difficulty", "facility", "answers", "flag"),
    [
        ("expert", 85.0, 20, "labelled expert, but its facility is 85 % (over 80 %)"),
        ("expert", 80.0, 20, None),  # at the band's edge: not a contradiction
        ("expert", 95.0, 19, None),  # too few answers to judge the label
        ("advanced", 92.0, 40, "labelled advanced, but its facility is 92 % (over 90 %)"),
        ("intermediate", 97.0, 20, "labelled intermediate, but its facility is 97 % (over 95 %)"),
        (
            "intermediate",
            15.0,
            20,
            "labelled intermediate, but its facility is 15 % (under 20 %)",
        ),
        ("beginner", 25.0, 20, "labelled beginner, but its facility is 25 % (under 30 %)"),
        ("beginner", 100.0, 20, None),  # easy is what beginner means
        ("expert", 5.0, 20, None),  # hard is what expert means
        ("expert", None, 0, None),
    ],
)
def test_a_facility_at_the_wrong_end_for_the_label_is_flagged_after_20_answers(
    difficulty, facility, answers, flag
):
    assert rules.label_mismatch(difficulty, facility, answers) == flag


def test_item_statistics_check_each_item_against_its_label():
    totals = [
        rules.ItemTotals("easy-expert", 20, 18, 0, 0, 0, credit=18.0),  # 90 %
        rules.ItemTotals("hard-beginner", 20, 4, 0, 0, 0, credit=4.0),  # 20 %
        rules.ItemTotals("fine", 20, 10, 0, 0, 0, credit=10.0),  # 50 %
    ]
    labels = {"easy-expert": "expert", "hard-beginner": "beginner", "fine": "advanced"}
    stats = {s.item_id: s for s in rules.item_statistics(totals, difficulty=labels)}
    assert stats["easy-expert"].label_mismatch == (
        "labelled expert, but its facility is 90 % (over 80 %)"
    )
    assert stats["hard-beginner"].label_mismatch == (
        "labelled beginner, but its facility is 20 % (under 30 %)"
    )
    assert stats["fine"].label_mismatch is None
    assert fixture_statistics()["q1"].label_mismatch is None  # five answers: too few


def test_a_misconception_is_counted_over_every_item_exposing_it_most_picked_first():
    items = [
        rules.ItemFirstPicks("s", "q1", "One", frozenset({"m1", "m2"}), 10, {"m1": 3, "m2": 1}),
        rules.ItemFirstPicks("s", "q2", "Two", frozenset({"m1"}), 5, {"m1": 2}),
        rules.ItemFirstPicks("s", "q2", "Two", frozenset({"m1"}), 5, {}),  # another version
        rules.ItemFirstPicks("t", "q3", "Three", frozenset({"m3"}), 0),  # not answered yet
    ]
    rows = rules.misconception_rows(items, {"m1": "Belief one.", "m2": "Belief two."})
    assert [(r.id, r.picked_first, r.first_picks) for r in rows] == [
        ("m1", 5, 20),
        ("m2", 1, 10),
        ("m3", 0, 0),
    ]
    assert rows[0].share == 25.0 and rows[2].share is None
    assert rows[0].items == (("s", "q1", "One"), ("s", "q2", "Two"))  # one row per item
    assert (rows[0].belief, rows[2].belief) == ("Belief one.", "m3")  # no longer catalogued


def test_a_lesson_checks_question_counts_with_a_sets_items_and_is_listed_apart():
    items = [
        rules.ItemFirstPicks("s", "q1", "One", frozenset({"m1"}), 4, {"m1": 1}),
        rules.ItemFirstPicks("topic", "check-q", "Asked", frozenset({"m1"}), 3, {"m1": 2}, True),
    ]
    (row,) = rules.misconception_rows(items, {})
    assert (row.picked_first, row.first_picks) == (3, 7)
    assert row.items == (("s", "q1", "One"),)
    assert row.checks == (("topic", "check-q", "Asked"),)

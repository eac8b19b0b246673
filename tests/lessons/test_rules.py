"""Judging a prediction: an option against the key, typed text against the proven output."""

from __future__ import annotations

from app.lessons import rules
from app.lessons.schema import Example

TYPED = Example(
    id="typed",
    code="x",
    launch={"nproc": 2},
    predict={"rank": 1},
    output={"0": "rank 0: 3.0\n", "1": "rank 1: 3.0\n"},
)
CHOSEN = Example(
    id="chosen",
    code="x",
    launch={"nproc": 2},
    predict={
        "prompt": "?",
        "options": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}],
        "answer": "B",
    },
    output={"all": "b\n"},
)


def test_typed_output_matches_the_ranks_proven_output_whatever_the_trailing_blanks():
    assert rules.prediction_right(TYPED, "rank 1: 3.0")
    assert rules.prediction_right(TYPED, "  rank 1: 3.0  \n\n")
    assert not rules.prediction_right(TYPED, "rank 1: 2.0")
    assert not rules.prediction_right(TYPED, "rank 0: 3.0")  # rank 0's line, not rank 1's


def test_a_chosen_prediction_is_right_only_on_the_key():
    assert rules.prediction_right(CHOSEN, "B")
    assert not rules.prediction_right(CHOSEN, "A")


def test_the_check_passes_only_with_every_question_right():
    assert rules.check_passed({"a": True, "b": True}, ["a", "b"])
    assert not rules.check_passed({"a": True, "b": False}, ["a", "b"])
    assert not rules.check_passed({"a": True}, ["a", "b"])


POOL = ["a", "b", "c", "d"]


def test_a_try_draws_the_same_questions_for_the_same_seed_in_the_lessons_order():
    first = rules.draw_check(POOL, 2, (), "seed-1")
    assert first == rules.draw_check(POOL, 2, (), "seed-1")
    assert len(first) == 2 and first == sorted(first, key=POOL.index)
    assert len({tuple(rules.draw_check(POOL, 2, (), f"s{n}")) for n in range(40)}) > 1


def test_a_retry_asks_other_questions_than_the_ones_missed_while_there_are_some():
    for n in range(40):
        assert rules.draw_check(POOL, 2, ("a", "b"), f"s{n}") == ["c", "d"]
        assert set(rules.draw_check(POOL, 2, ("a",), f"s{n}")) <= {"b", "c", "d"}


def test_when_too_few_questions_are_left_missed_ones_come_back():
    assert rules.draw_check(POOL, 2, ("a", "b", "c"), "s") in (["a", "d"], ["b", "d"], ["c", "d"])
    assert rules.draw_check(["a", "b"], 2, ("a", "b"), "s") == ["a", "b"]  # a pool of two


def test_the_tries_keep_every_question_ever_missed_and_read_back_as_written():
    tries = rules.CheckTries().after(["a", "b"], {"a": "B", "b": "A"}, ["a"])
    tries = tries.after(["c", "d"], {"c": "B", "d": "A"}, ["c"])
    assert (tries.tries, tries.asked, tries.missed) == (2, ("c", "d"), ("a", "c"))
    assert rules.CheckTries.read(tries.dumps(), lambda q, a: True) == tries


def test_tries_stored_before_draws_read_as_one_try_of_those_answers():
    legacy = '{"where-sum": "B", "who-calls": "A"}'
    tries = rules.CheckTries.read(legacy, lambda question, answer: answer == "A")
    assert (tries.tries, tries.asked) == (1, ("where-sum", "who-calls"))
    assert tries.missed == ("where-sum",)
    assert rules.CheckTries.read("not json", lambda q, a: True) == rules.CheckTries()


def test_the_tries_keep_each_questions_first_answer_whatever_comes_after():
    tries = rules.CheckTries().after(["a", "b"], {"a": "B", "b": "A"}, ["a"])
    tries = tries.after(["a", "c"], {"a": "A", "c": "B"}, ["c"])
    assert tries.first == {"a": "B", "b": "A", "c": "B"}  # a's retry (A) is not its first
    assert rules.CheckTries.read(tries.dumps(), lambda q, a: True).first == tries.first


def test_tries_stored_before_first_answers_were_kept_claim_only_a_single_trys():
    one = '{"answers": {"a": "B"}, "asked": ["a"], "missed": ["a"], "tries": 1}'
    assert rules.CheckTries.read(one, lambda q, a: False).first == {"a": "B"}
    two = '{"answers": {"a": "A"}, "asked": ["a"], "missed": ["a"], "tries": 2}'
    assert rules.CheckTries.read(two, lambda q, a: False).first == {}
    legacy = '{"a": "B"}'
    assert rules.CheckTries.read(legacy, lambda q, a: False).first == {"a": "B"}

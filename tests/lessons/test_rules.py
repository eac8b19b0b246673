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

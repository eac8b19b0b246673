"""FSRS scheduling over stored card fields: what each grade does to a card, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.review.scheduling import CardState, Grade, grade_for_outcome, review

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def test_a_new_card_graded_again_comes_back_in_a_minute_good_in_ten() -> None:
    new = CardState.new(NOW)
    assert review(new, Grade.AGAIN, NOW).due == NOW + timedelta(minutes=1)
    assert review(new, Grade.GOOD, NOW).due == NOW + timedelta(minutes=10)


def test_easy_graduates_a_new_card_to_days_and_better_grades_wait_longer() -> None:
    new = CardState.new(NOW)
    dues = [review(new, grade, NOW).due for grade in Grade]
    assert dues == sorted(dues)
    assert dues[Grade.EASY - 1] - NOW >= timedelta(days=1)


def test_a_learned_card_reviewed_again_waits_longer_than_the_first_interval() -> None:
    learning = review(CardState.new(NOW), Grade.GOOD, NOW)
    card = review(learning, Grade.GOOD, learning.due)  # graduates to the review state
    first = card.due - learning.due
    later = review(card, Grade.GOOD, card.due)
    assert later.due - card.due > first
    assert later.last_review == card.due
    assert later.due.tzinfo is not None


def test_forgetting_a_learned_card_brings_it_back_soon() -> None:
    card = review(CardState.new(NOW), Grade.EASY, NOW)
    forgotten = review(card, Grade.AGAIN, card.due)
    assert forgotten.due - card.due <= timedelta(minutes=10)


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        review(CardState.new(NOW), Grade.GOOD, NOW.replace(tzinfo=None))


@pytest.mark.parametrize(
    ("correct", "hinted", "grade"),
    [(False, False, Grade.AGAIN), (False, True, Grade.AGAIN), (True, True, Grade.HARD),
     (True, False, Grade.GOOD)],
)  # fmt: skip
def test_an_answered_item_grades_its_card(correct: bool, hinted: bool, grade: Grade) -> None:
    assert grade_for_outcome(correct, hinted) is grade

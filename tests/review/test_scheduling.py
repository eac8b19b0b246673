"""FSRS scheduling over stored card fields: what each grade does to a card, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.review.scheduling import (
    CardState,
    Grade,
    grade_for_outcome,
    interval_label,
    preview,
    relative,
    review,
)

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


def _states() -> list[CardState]:
    """A new card, one in its learning steps, one graduated, and one forgotten (relearning)."""
    new = CardState.new(NOW)
    learning = review(new, Grade.GOOD, NOW)
    graduated = review(learning, Grade.GOOD, learning.due)
    forgotten = review(graduated, Grade.AGAIN, graduated.due + timedelta(days=3))
    return [new, learning, graduated, forgotten]


def test_each_grade_buttons_interval_is_the_one_its_grade_then_gives() -> None:
    for card in _states():
        now = card.due + timedelta(hours=1)
        shown = preview(card, now)
        for grade in Grade:
            # Reviewed twice from the same state: the same due both times (no random fuzz), and
            # the one its button showed.
            assert review(card, grade, now).due == review(card, grade, now).due == shown[grade]


def test_a_long_interval_is_not_fuzzed() -> None:
    card = review(review(CardState.new(NOW), Grade.EASY, NOW), Grade.EASY, NOW + timedelta(days=9))
    moment = card.due + timedelta(days=1)
    dues = {review(card, Grade.GOOD, moment).due for _ in range(20)}
    assert len(dues) == 1 and next(iter(dues)) - moment > timedelta(days=20)


def test_a_new_cards_buttons_read_as_anki_users_expect() -> None:
    dues = preview(CardState.new(NOW), NOW)
    labels = {grade: interval_label(due - NOW) for grade, due in dues.items()}
    assert labels[Grade.AGAIN] == "1 min" and labels[Grade.GOOD] == "10 min"
    assert labels[Grade.EASY].endswith(" d")


@pytest.mark.parametrize(
    ("interval", "label"),
    [(timedelta(seconds=20), "1 min"), (timedelta(minutes=10), "10 min"),
     (timedelta(minutes=59, seconds=30), "60 min"), (timedelta(hours=5), "5 h"),
     (timedelta(days=1), "1 d"), (timedelta(days=4, hours=3), "4 d"),
     (timedelta(days=63), "2.1 mo"), (timedelta(days=548), "1.5 y")],
)  # fmt: skip
def test_interval_labels(interval: timedelta, label: str) -> None:
    assert interval_label(interval) == label


@pytest.mark.parametrize(
    ("later", "words"),
    [(timedelta(seconds=10), "now"), (timedelta(minutes=1), "in 1 minute"),
     (timedelta(minutes=10), "in 10 minutes"), (timedelta(hours=3), "in 3 hours"),
     (timedelta(days=4), "in 4 days"), (timedelta(days=1), "in 1 day")],
)  # fmt: skip
def test_a_due_time_in_words(later: timedelta, words: str) -> None:
    assert relative(NOW + later, NOW) == words


def test_hards_note_after_the_grade_says_what_its_button_said() -> None:
    due = preview(CardState.new(NOW), NOW)[Grade.HARD]
    button = interval_label(due - NOW)
    assert button == "6 min"  # FSRS: halfway between the 1- and 10-minute steps, 5.5 minutes
    # The note is written a moment after the grade: it still says the button's number.
    assert relative(due, NOW + timedelta(seconds=2)) == "in 6 minutes"


def test_again_in_the_learning_steps_comes_back_after_its_step_on_the_fake_clock(clock) -> None:
    card = review(CardState.new(clock()), Grade.AGAIN, clock())
    clock.advance(59)
    assert card.due > clock()  # not back at once
    clock.advance(1)
    assert card.due <= clock()  # back after its one-minute step
    card = review(card, Grade.GOOD, clock())  # the next step: ten minutes
    assert card.due == clock() + timedelta(minutes=10)

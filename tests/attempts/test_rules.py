"""The timing, attempt and scoring rules, with no fixtures: time is an argument."""

from datetime import UTC, datetime, timedelta

import pytest

from app.attempts.rules import (
    Clock,
    ItemStatus,
    Refusal,
    credit,
    is_correct,
    parse_answer,
    public_question,
    refusal,
    score,
    shown_answer,
    status_after,
)
from app.challenges.schema import ChoiceItem, NumericItem

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def choice(**changes: object) -> ChoiceItem:
    data: dict[str, object] = {
        "id": "q",
        "kind": "choice",
        "category": "Conceptual",
        "difficulty": "beginner",
        "title": "T",
        "prompt": "P",
        "explanation": "SECRET-EXPLANATION",
        "hint": "H",
        "options": [
            {"id": "A", "text": "a", "feedback": "SECRET-A"},
            {"id": "B", "text": "b", "feedback": "SECRET-B"},
        ],
        "answer": "B",
    }
    data.update(changes)
    return ChoiceItem.model_validate(data)


def test_the_deadline_is_the_server_start_plus_the_limit():
    assert Clock(START, 120, 3).deadline == START + timedelta(seconds=120)


def test_an_answer_within_the_grace_after_the_deadline_still_counts():
    clock = Clock(START, 120, 3)
    assert not clock.expired(START + timedelta(seconds=123))
    assert clock.expired(START + timedelta(seconds=123.001))


def test_an_untimed_question_never_expires():
    clock = Clock(START, None, 3)
    assert clock.deadline is None
    assert not clock.expired(START + timedelta(days=30))
    assert clock.seconds_left(START) is None


def test_seconds_left_counts_down_and_stops_at_zero():
    clock = Clock(START, 60, 3)
    assert clock.seconds_left(START + timedelta(seconds=15)) == 45
    assert clock.seconds_left(START + timedelta(seconds=90)) == 0


def test_a_late_answer_is_refused_as_time_up():
    late = START + timedelta(seconds=200)
    assert refusal(ItemStatus.OPEN, Clock(START, 120, 3), 0, 2, late) is Refusal.TIME_UP


def test_a_third_attempt_is_refused_when_two_are_allowed():
    assert refusal(ItemStatus.OPEN, Clock(START, 120, 3), 2, 2, START) is Refusal.NO_ATTEMPTS
    assert refusal(ItemStatus.OPEN, Clock(START, 120, 3), 1, 2, START) is None


def test_closed_and_unopened_questions_refuse_answers():
    clock = Clock(START, 120, 3)
    assert refusal(ItemStatus.CORRECT, clock, 1, 2, START) is Refusal.CLOSED
    assert refusal(ItemStatus.PENDING, clock, 0, 2, START) is Refusal.NOT_OPEN


def test_a_wrong_answer_keeps_the_question_open_until_attempts_run_out():
    assert status_after(False, 1, 2) is ItemStatus.OPEN
    assert status_after(False, 2, 2) is ItemStatus.INCORRECT
    assert status_after(True, 2, 2) is ItemStatus.CORRECT


def test_choice_answers_must_name_known_options():
    item = choice()
    assert parse_answer(item, ["B"]) == "B"
    assert parse_answer(item, ["Z"]) is None
    assert parse_answer(item, ["A", "B"]) is None  # one option only
    assert parse_answer(item, []) is None


def test_multiple_answers_are_judged_as_a_set():
    item = choice(options=[{"id": x, "text": x} for x in "ABC"], answer=["A", "C"])
    assert parse_answer(item, ["C", "A"]) == "A,C"
    assert is_correct(item, "A,C")
    assert not is_correct(item, "A")


def test_numeric_answers_use_the_tolerance():
    item = NumericItem.model_validate(
        {
            "id": "n",
            "kind": "numeric",
            "category": "Metrics",
            "difficulty": "beginner",
            "title": "T",
            "prompt": "P",
            "explanation": "E",
            "answer": 3.333,
            "tolerance": 0.05,
        }
    )
    assert is_correct(item, parse_answer(item, ["3,3"]) or "")
    assert not is_correct(item, parse_answer(item, ["3.4"]) or "")
    assert parse_answer(item, ["three"]) is None
    assert parse_answer(item, ["nan"]) is None


RIGHT_FIRST = (ItemStatus.CORRECT, 1)
RIGHT_SECOND = (ItemStatus.CORRECT, 2)


def test_the_badge_needs_every_item_correct():
    assert score([RIGHT_FIRST] * 5).perfect
    assert not score([RIGHT_FIRST] * 4 + [(ItemStatus.TIMED_OUT, 0)]).perfect
    assert score([RIGHT_FIRST, (ItemStatus.INCORRECT, 2)]).percent == 50


def test_a_second_try_is_worth_two_thirds_and_a_third_one_third():
    assert credit(ItemStatus.CORRECT, 1) == 1
    assert credit(ItemStatus.CORRECT, 2) == pytest.approx(2 / 3)
    assert credit(ItemStatus.CORRECT, 3) == pytest.approx(1 / 3)
    assert credit(ItemStatus.CORRECT, 5) == 0
    assert credit(ItemStatus.INCORRECT, 1) == 0
    assert score([RIGHT_FIRST, RIGHT_SECOND]).percent == 83


def test_the_badge_needs_nine_in_ten_items_right_at_the_first_try():
    """A set of fewer than ten items needs every one at the first try; ten allow one retry."""
    assert not score([RIGHT_FIRST] * 6 + [RIGHT_SECOND]).perfect
    assert score([RIGHT_FIRST] * 9 + [RIGHT_SECOND]).perfect
    assert not score([RIGHT_FIRST] * 8 + [RIGHT_SECOND] * 2).perfect
    result = score([RIGHT_FIRST] * 9 + [RIGHT_SECOND])
    assert (result.correct, result.first_try, result.total) == (10, 9, 10)


def test_the_options_are_shown_in_the_seeds_order_lettered_as_shown_as_tokens_of_the_showing():
    item = choice(options=[{"id": letter, "text": letter.lower()} for letter in "ABCD"], answer="B")
    seeds = [f"attempt {n}" for n in range(40)]
    views = [public_question(item, ItemStatus.INCORRECT, "A", 2, 2, False, seed) for seed in seeds]
    orders = {tuple(option["text"] for option in view["options"]) for view in views}
    assert len(orders) > 1
    for number, (seed, view) in enumerate(zip(seeds, views, strict=True)):
        assert [option["letter"] for option in view["options"]] == list("ABCD")
        letter = {option["text"]: option["letter"] for option in view["options"]}
        value = {option["text"]: option["value"] for option in view["options"]}
        assert not set(value.values()) & set("ABCD")  # no option's id reaches the page
        assert "letters" not in view and "id" not in repr(view["options"])
        assert view["answer"] == [value["b"]] and view["answer_letters"] == [letter["b"]]
        assert view["last_answer"] == value["a"] and shown_answer(view) == letter["a"]
        assert parse_answer(item, [value["b"]], seed) == "B"  # a token reads as its option's id
        assert parse_answer(item, ["B"], seed) == "B"  # and an id as itself (API clients)
        other = views[(number + 1) % len(views)]["options"][0]["value"]
        assert parse_answer(item, [other], seed) is None  # another showing's token is unknown
    again = public_question(item, ItemStatus.OPEN, None, 0, 2, False, seed="attempt 0")
    fields = ("value", "letter", "text")
    assert [{key: option[key] for key in fields} for option in again["options"]] == [
        {key: option[key] for key in fields} for option in views[0]["options"]
    ]


def test_an_open_question_shows_no_key_feedback_or_explanation():
    view = public_question(choice(), ItemStatus.OPEN, None, 0, 2, hint_shown=False)
    text = repr(view)
    assert "SECRET" not in text
    assert "answer" not in view
    assert view["hint"] is None


def test_after_a_wrong_try_only_the_chosen_options_feedback_shows():
    view = public_question(choice(), ItemStatus.OPEN, "A", 1, 2, hint_shown=True)
    assert view["chosen_feedback"] == [{"letter": "A", "feedback": "SECRET-A"}]
    assert "SECRET-B" not in repr(view)
    assert "SECRET-EXPLANATION" not in repr(view)
    assert view["hint"] == "H"


def test_a_closed_question_shows_the_key_and_the_explanation():
    view = public_question(choice(), ItemStatus.INCORRECT, "A", 2, 2, hint_shown=False)
    assert view["answer"] == ["B"]
    assert view["explanation"] == "SECRET-EXPLANATION"

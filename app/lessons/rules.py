"""Judging a lesson: a prediction against the example's key or proven output, and the check.
Pure: no database, no web framework."""

from __future__ import annotations

from app.lessons.schema import Example


def normalised(text: str) -> str:
    """Text as compared: each line's trailing whitespace and the blank ends dropped (as verify
    compares stdout), so a learner who omits the final newline is not marked wrong."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def prediction_right(example: Example, answer: str) -> bool:
    """Whether a prediction (an option id, or the text a rank prints) matches the truth."""
    predict = example.predict
    if predict.rank is not None:
        return normalised(answer) == normalised(example.shown(predict.rank))
    return answer == predict.answer


def check_passed(results: dict[str, bool], question_ids: list[str]) -> bool:
    """The check is passed when every question is answered right."""
    return all(results.get(question_id, False) for question_id in question_ids)

"""Judging a lesson: a prediction against the example's key or proven output, and the check.
Pure: no database, no web framework."""

from __future__ import annotations

from app.lessons import output_match
from app.lessons.schema import Example


def typed_verdict(example: Example, answer: str) -> output_match.Verdict | None:
    """How a typed prediction compares with the rank's proven output (None: a choice)."""
    rank = example.predict.rank
    return output_match.compare(answer, example.shown(rank)) if rank is not None else None


def prediction_right(example: Example, answer: str) -> bool:
    """Whether a prediction (an option id, or the text a rank prints) matches the truth: typed
    text as a person compares it (app.lessons.output_match)."""
    verdict = typed_verdict(example, answer)
    if verdict is not None:
        return verdict.right
    return answer == example.predict.answer


def check_passed(results: dict[str, bool], question_ids: list[str]) -> bool:
    """The check is passed when every question is answered right."""
    return all(results.get(question_id, False) for question_id in question_ids)

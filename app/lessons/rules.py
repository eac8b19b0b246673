"""Judging a lesson: a prediction against the example's key or proven output, and the check
(which questions a try asks, and the tries so far). Pure: no database, no web framework."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class CheckTries:
    """The learner's tries at the check: how many, the last one's questions and answers (option
    ids by question), every question they have answered wrong, in the order first missed, and
    their first answer to each question asked (what misconception dashboards count)."""

    tries: int = 0
    asked: tuple[str, ...] = ()
    answers: dict[str, str] = field(default_factory=dict)
    missed: tuple[str, ...] = ()
    first: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, text: str | None, is_right: Callable[[str, str], bool]) -> CheckTries:
        """The tries as stored; a row from before draws holds only the answers of one try."""
        try:
            data = json.loads(text or "")
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        if "answers" not in data or not isinstance(data["answers"], dict):
            answers = {str(k): str(v) for k, v in data.items()}
            wrong = tuple(q for q, a in answers.items() if not is_right(q, a))
            return cls(1 if answers else 0, tuple(answers), answers, wrong, answers)
        tries = int(data.get("tries", 1))
        answers = {str(k): str(v) for k, v in data["answers"].items()}
        first = data.get("first")
        if not isinstance(first, dict):
            # Stored before first answers were kept: a single try's answers are its first; a
            # later try's earlier answers are gone, so none is claimed.
            first = answers if tries == 1 else {}
        return cls(
            tries=tries,
            asked=tuple(str(q) for q in data.get("asked", [])),
            answers=answers,
            missed=tuple(str(q) for q in data.get("missed", [])),
            first={str(k): str(v) for k, v in first.items()},
        )

    def dumps(self) -> str:
        """The tries as stored (JSON)."""
        fields = {"tries": self.tries, "asked": list(self.asked), "answers": self.answers}
        return json.dumps(
            {**fields, "missed": list(self.missed), "first": self.first}, sort_keys=True
        )

    def after(self, asked: list[str], answers: dict[str, str], wrong: list[str]) -> CheckTries:
        """The tries once this one is added."""
        missed = self.missed + tuple(q for q in wrong if q not in self.missed)
        first = {**answers, **self.first}  # an answer given before stays the first
        return CheckTries(self.tries + 1, tuple(asked), answers, missed, first)


def draw_check(pool: Sequence[str], asks: int, missed: Collection[str], seed: str) -> list[str]:
    """The questions of a try, in the lesson's order: `asks` drawn at random (the same draw for
    the same seed) among those not missed yet, so that a retry asks other questions than the
    ones it missed; only when too few are left do missed ones come back (re-read first)."""
    rng = random.Random(seed)
    fresh = [question for question in pool if question not in missed]
    again = [question for question in pool if question in missed]
    if len(fresh) >= asks:
        chosen = set(rng.sample(fresh, asks))
    else:
        chosen = set(fresh) | set(rng.sample(again, asks - len(fresh)))
    return [question for question in pool if question in chosen]

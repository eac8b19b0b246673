"""Timing, attempts and scoring: pure rules that take `now` as an argument.

Pure: the standard library, pydantic and the challenge schema only (an import-linter contract).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from app.challenges.schema import ItemBase
from app.kinds import kind_of


class ItemStatus(StrEnum):
    """Where one question of an attempt stands."""

    PENDING = "pending"
    OPEN = "open"
    CORRECT = "correct"
    INCORRECT = "incorrect"
    TIMED_OUT = "timed_out"

    @property
    def closed(self) -> bool:
        """Whether the learner can no longer answer (and may now see the key)."""
        return self in (ItemStatus.CORRECT, ItemStatus.INCORRECT, ItemStatus.TIMED_OUT)


class Refusal(StrEnum):
    """Why the server refuses an answer."""

    NOT_OPEN = "This question is not open."
    CLOSED = "This question is already closed."
    TIME_UP = "Time is up for this question; the answer was not recorded."
    NO_ATTEMPTS = "No attempts left for this question."
    INVALID = "That answer is not one of the options."


@dataclass(frozen=True)
class Clock:
    """A question's clock: when the server opened it and how long the learner has."""

    started_at: datetime
    time_limit_s: float | None  # None: untimed
    grace_s: float

    @property
    def deadline(self) -> datetime | None:
        """The moment shown to the learner as 0:00 (None when untimed)."""
        if self.time_limit_s is None:
            return None
        return self.started_at + timedelta(seconds=self.time_limit_s)

    def expired(self, now: datetime) -> bool:
        """Whether an answer arriving now is too late (the deadline plus the grace has passed)."""
        deadline = self.deadline
        return deadline is not None and now > deadline + timedelta(seconds=self.grace_s)

    def seconds_left(self, now: datetime) -> float | None:
        """Seconds until the displayed deadline, never negative (None when untimed)."""
        deadline = self.deadline
        if deadline is None:
            return None
        return max(0.0, (deadline - now).total_seconds())


def effective_time_limit(limit_s: float, multiplier: float | None) -> float | None:
    """Apply a learner's time accommodation: a factor on the limit, or None for untimed."""
    return None if multiplier is None else limit_s * multiplier


def refusal(
    status: ItemStatus, clock: Clock, attempts_used: int, attempts_allowed: int, now: datetime
) -> Refusal | None:
    """Return why an answer submitted now must be refused, or None if it may be judged."""
    if status is ItemStatus.PENDING:
        return Refusal.NOT_OPEN
    if status.closed:
        return Refusal.CLOSED
    if clock.expired(now):
        return Refusal.TIME_UP
    if attempts_used >= attempts_allowed:
        return Refusal.NO_ATTEMPTS
    return None


def parse_answer(item: ItemBase, raw: Iterable[str]) -> str | None:
    """Normalise what the learner sent into the stored answer text, or None if it is invalid."""
    return kind_of(item).parse_answer(item, [value.strip() for value in raw if value.strip()])


def is_correct(item: ItemBase, answer: str) -> bool:
    """Judge a normalised answer against the item's key."""
    return kind_of(item).is_correct(item, answer)


def status_after(correct: bool, attempts_used: int, attempts_allowed: int) -> ItemStatus:
    """Return the status after a judged answer (attempts_used includes it)."""
    if correct:
        return ItemStatus.CORRECT
    return ItemStatus.INCORRECT if attempts_used >= attempts_allowed else ItemStatus.OPEN


@dataclass(frozen=True)
class Score:
    """How an attempt went."""

    correct: int
    total: int

    @property
    def perfect(self) -> bool:
        """Every item answered correctly: the badge is earned."""
        return self.total > 0 and self.correct == self.total

    @property
    def percent(self) -> int:
        """The score as a whole percentage."""
        return round(100 * self.correct / self.total) if self.total else 0


def score(statuses: Iterable[ItemStatus]) -> Score:
    """Count correct items among all items of an attempt."""
    listed = list(statuses)
    return Score(sum(status is ItemStatus.CORRECT for status in listed), len(listed))


def public_question(
    item: ItemBase,
    status: ItemStatus,
    last_answer: str | None,
    attempts_used: int,
    attempts_allowed: int,
    hint_shown: bool,
) -> dict[str, object]:
    """What the learner may see of an item now: the key, feedback and explanation only once closed.

    Everything a page or the JSON API shows of a question goes through here, so that a key can
    never reach the browser before the learner has answered.
    """
    kind = kind_of(item)
    view: dict[str, object] = {
        "id": item.id,
        "kind": kind.name,
        "partial": kind.partial,
        "category": item.category.value,
        "difficulty": item.difficulty.value,
        "title": item.title,
        "prompt": item.prompt,
        "status": status.value,
        "attempts_used": attempts_used,
        "attempts_left": max(0, attempts_allowed - attempts_used),
        "attempts_allowed": attempts_allowed,
        "has_hint": item.hint is not None,
        "hint": item.hint if hint_shown else None,
        "last_answer": last_answer,
    }
    view.update(kind.view(item, last_answer, status.closed))
    if status.closed:
        view["explanation"] = item.explanation
    return view

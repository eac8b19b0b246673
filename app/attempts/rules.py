"""Timing, attempts and scoring: pure rules that take `now` as an argument.

Pure: the standard library, pydantic and the challenge schema only (an import-linter contract).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from app.challenges.schema import ItemBase
from app.kinds import kind_of, order


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


def parse_answer(item: ItemBase, raw: Iterable[str], seed: str | None = None) -> str | None:
    """Normalise what the learner sent into the stored answer text, or None if it is invalid.
    `seed` is the one the question was shown with (public_question): options are sent as its
    tokens (app.kinds.order), and a token of another showing is invalid."""
    values = [value.strip() for value in raw if value.strip()]
    return kind_of(item).parse_answer(item, values, order.item_seed(seed, item.id))


def is_correct(item: ItemBase, answer: str) -> bool:
    """Judge a normalised answer against the item's key."""
    return kind_of(item).is_correct(item, answer)


def status_after(correct: bool, attempts_used: int, attempts_allowed: int) -> ItemStatus:
    """Return the status after a judged answer (attempts_used includes it)."""
    if correct:
        return ItemStatus.CORRECT
    return ItemStatus.INCORRECT if attempts_used >= attempts_allowed else ItemStatus.OPEN


# Scoring rewards knowing, not trying (README, "Scoring"). As in Moodle's adaptive mode, each
# extra try costs a third of the item's credit; and the badge asks for first tries: with options
# shuffled, a guesser's first try at a four-option item is right one time in four, so a set of
# six such items falls to guessing about once in 4,096 attempts (tests/attempts/test_guessing.py
# plays guessers against every shipped set).
PENALTY_PER_EXTRA_TRY = 1 / 3
BADGE_FIRST_TRY_SHARE = 0.9  # and every item right in the end


# The one definition of an attempt's score, in the words every page that shows one uses.
SCORE_IN_WORDS = (
    "Score: a question right at the first try scores 1, each extra try costs a third, a wrong or "
    "timed-out one scores 0; an attempt's score is their sum as a whole percentage of its "
    "questions, the number its results page shows the learner."
)


def credit(status: ItemStatus, attempts_used: int) -> float:
    """An item's credit: 1 for right at the first try, less a penalty for each extra try."""
    if status is not ItemStatus.CORRECT:
        return 0.0
    return max(0.0, 1.0 - PENALTY_PER_EXTRA_TRY * (attempts_used - 1))


@dataclass(frozen=True)
class Score:
    """How an attempt went."""

    correct: int  # right in the end, at whatever try
    total: int
    first_try: int = 0  # right at the first try
    points: float = 0.0  # the sum of the items' credits

    @property
    def perfect(self) -> bool:
        """Every item right in the end, and nearly all at the first try: the badge is earned."""
        return (
            self.total > 0
            and self.correct == self.total
            and self.first_try >= BADGE_FIRST_TRY_SHARE * self.total
        )

    @property
    def percent(self) -> int:
        """The score as a whole percentage of the credit an all-first-try attempt gets."""
        return round(100 * self.points / self.total) if self.total else 0


def score(results: Iterable[tuple[ItemStatus, int]]) -> Score:
    """Score an attempt from each item's (status, tries used)."""
    listed = list(results)
    return Score(
        correct=sum(status is ItemStatus.CORRECT for status, _ in listed),
        total=len(listed),
        first_try=sum(status is ItemStatus.CORRECT and used == 1 for status, used in listed),
        points=sum(credit(status, used) for status, used in listed),
    )


def first_pick_misconceptions(item: ItemBase, first_answer: str | None) -> list[str]:
    """The misconceptions a first pick shows: the ids named by the distractors it chose, in
    option order (a key names none). The first pick is the first try the score rewards."""
    if not first_answer:
        return []
    chosen = set(first_answer.split(","))
    return [
        option.misconception
        for option in getattr(item, "options", [])
        if option.id in chosen and option.misconception is not None
    ]


def first_tries_needed(total: int) -> int:
    """How many of `total` questions must be right at the first try for the badge (all right
    in the end): the smallest count Score.perfect accepts, so the set page states the rule."""
    return next(k for k in range(total + 1) if Score(total, total, k).perfect) if total else 0


def badge_earned(score: Score, first_sights: Iterable[bool]) -> bool:
    """The badge: a perfect score where every question was answered on first sight of its
    variant (shown to the learner for the first time in this attempt, in no mode before)."""
    return score.perfect and all(first_sights)


def draw_variant(keys: Sequence[str], seen: Collection[str], draw: random.Random) -> str:
    """The variant a learner is shown next: one not yet shown to them, at random; once every
    one has been shown, any of them (seen before, it counts toward no badge). "" for an item
    without parameters (`keys` empty: nothing proven to draw from)."""
    if not keys:
        return ""
    fresh = [key for key in keys if key not in seen]
    return draw.choice(fresh or list(keys))


def attempt_seed(secret: str, attempt_id: int | None, user_id: int) -> str:
    """The order seed of a timed attempt: its own, so each attempt (and learner) gets its own
    order, and a reload or a resume the same one."""
    return order.seed(secret, "attempt", attempt_id, user_id)


def public_question(
    item: ItemBase,
    status: ItemStatus,
    last_answer: str | None,
    attempts_used: int,
    attempts_allowed: int,
    hint_shown: bool,
    seed: str | None = None,
) -> dict[str, object]:
    """What the learner may see of an item now: the key, feedback and explanation only once closed.

    Everything a page or the JSON API shows of a question goes through here, so that a key can
    never reach the browser before the learner has answered. `seed` orders the options for this
    learner and showing (app.kinds.order; None: file order, for authors' previews).
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
    view.update(kind.view(item, last_answer, status.closed, order.item_seed(seed, item.id)))
    if status.closed:
        view["explanation"] = item.explanation
    return view


def shown_answer(view: dict[str, object]) -> str | None:
    """The learner's last answer as they saw it: the letters of the options they picked, or the
    value they gave."""
    letters = view.get("last_letters")
    if isinstance(letters, list):
        return ",".join(letters)
    answer = view.get("last_answer")
    return None if answer is None else str(answer)


def shown_key(view: dict[str, object]) -> str | None:
    """A closed question's key as the learner saw it: the letters of its showing, or the value."""
    letters = view.get("answer_letters")
    if isinstance(letters, list):
        return ",".join(letters)
    answer = view.get("answer")
    if answer is None:
        return None
    return ",".join(map(str, answer)) if isinstance(answer, list) else str(answer)

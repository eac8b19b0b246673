"""FSRS scheduling as a pure function over a card's stored fields (no database, no clock).

The `fsrs` package does the maths; this module only converts between its Card and the columns
RankLab stores, so that every review is reproducible from the stored state and the time given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum

from fsrs import Card, Rating, Scheduler, State

# One scheduler for the whole app: FSRS-6's published default parameters, 90% target recall,
# learning steps of 1 and 10 minutes (relearning: 10 minutes). No fuzz: py-fsrs draws it from the
# process-wide random(), so the interval a grade button shows would not be the one it gives, and
# a review could not be replayed from its stored state.
SCHEDULER = Scheduler(desired_retention=0.9, enable_fuzzing=False)


class Grade(IntEnum):
    """How well the learner recalled (FSRS's four ratings, keys 1-4 on the flashcard page)."""

    AGAIN = 1
    HARD = 2
    GOOD = 3
    EASY = 4

    @property
    def label(self) -> str:
        """The word on the button."""
        return self.name.capitalize()


@dataclass(frozen=True)
class CardState:
    """What RankLab stores of an FSRS card."""

    state: int
    step: int | None
    stability: float | None
    difficulty: float | None
    due: datetime
    last_review: datetime | None

    @classmethod
    def new(cls, now: datetime) -> CardState:
        """A card never reviewed, due now."""
        return cls(int(State.Learning), 0, None, None, now, None)


def review(card: CardState, grade: Grade, now: datetime) -> CardState:
    """Return the card's state after a review with this grade at `now` (aware UTC)."""
    if now.tzinfo is None:
        raise ValueError("review times must be aware (UTC)")
    fsrs_card = Card(
        card_id=1,  # not used for scheduling; rows have their own ids
        state=State(card.state),
        step=card.step,
        stability=card.stability,
        difficulty=card.difficulty,
        due=card.due,
        last_review=card.last_review,
    )
    reviewed, _log = SCHEDULER.review_card(fsrs_card, Rating(int(grade)), review_datetime=now)
    return CardState(
        int(reviewed.state),
        reviewed.step,
        reviewed.stability,
        reviewed.difficulty,
        reviewed.due,
        reviewed.last_review,
    )


def preview(card: CardState, now: datetime) -> dict[Grade, datetime]:
    """When the card would next be due after each grade at `now` (what its buttons show)."""
    return {grade: review(card, grade, now).due for grade in Grade}


def interval_label(interval: timedelta) -> str:
    """A grade button's interval, short: "1 min", "10 min", "5 h", "4 d", "2.1 mo", "1.5 y"."""
    seconds = max(interval.total_seconds(), 0)
    if seconds < 3600:
        return f"{max(1, math.ceil(seconds / 60 - 1e-9))} min"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h"
    days = seconds / 86400
    if days < 30:
        return f"{round(days)} d"
    if days < 365:
        return f"{days / 30:.1f} mo"
    return f"{days / 365:.1f} y"


def relative(moment: datetime, now: datetime) -> str:
    """A due time in words from `now`, for pages without JavaScript: "in 4 days", "now"."""
    seconds = (moment - now).total_seconds()
    if seconds < 30:
        return "now"
    for size, unit in ((86400 * 365, "year"), (86400 * 30, "month"), (86400, "day"),
                       (3600, "hour"), (60, "minute")):  # fmt: skip
        if seconds >= size or unit == "minute":
            # Minutes round up, as the grade buttons' interval_label does: Hard's 5.5 minutes
            # read "6 min" on its button and must not read "in 5 minutes" after it.
            whole = math.ceil(seconds / size - 1e-9) if unit == "minute" else round(seconds / size)
            count = max(1, whole)
            return f"in {count} {unit}{'s' if count != 1 else ''}"
    raise AssertionError("unreachable")


def grade_for_outcome(correct: bool, hinted: bool) -> Grade:
    """The rating an answered item gives its review card: wrong is Again, right with a hint
    Hard, right Good."""
    if not correct:
        return Grade.AGAIN
    return Grade.HARD if hinted else Grade.GOOD

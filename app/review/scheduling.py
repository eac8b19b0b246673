"""FSRS scheduling as a pure function over a card's stored fields (no database, no clock).

The `fsrs` package does the maths; this module only converts between its Card and the columns
RankLab stores, so that every review is reproducible from the stored state and the time given.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from fsrs import Card, Rating, Scheduler, State

# One scheduler for the whole app: FSRS-6's published default parameters, 90% target recall.
SCHEDULER = Scheduler(desired_retention=0.9)


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


def grade_for_outcome(correct: bool, hinted: bool) -> Grade:
    """The rating an answered item gives its review card: wrong is Again, right with a hint
    Hard, right Good."""
    if not correct:
        return Grade.AGAIN
    return Grade.HARD if hinted else Grade.GOOD

"""Review cards in the database: grade one (creating it on first sight), list and count due ones.

Services commit; every write starts a writer transaction (app.db.begin_write) first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.db import begin_write
from app.review.models import CardSource, ReviewCard, ReviewLog
from app.review.scheduling import CardState, Grade, grade_for_outcome, review


@dataclass(frozen=True)
class CardKey:
    """What a card stands for: a topic's flashcard, or an item of a set."""

    source: CardSource
    topic: str
    deck_id: str
    card_id: str


def grade(
    session: Session, user_id: int, key: CardKey, grade: Grade, mode: str, now: datetime
) -> ReviewCard:
    """Review the learner's card for `key` with `grade` at `now`, creating it if new; commit."""
    begin_write(session)
    card = _card(session, user_id, key)
    if card is None:
        card = _new_card(session, user_id, key, now)
    before = CardState(card.state, card.step, card.stability, card.difficulty, card.due,
                       card.last_review)  # fmt: skip
    after = review(before, grade, now)
    card.state, card.step = after.state, after.step
    card.stability, card.difficulty = after.stability, after.difficulty
    card.due, card.last_review = after.due, after.last_review
    assert card.id is not None
    session.add(card)
    session.add(
        ReviewLog(
            review_card_id=card.id,
            user_id=user_id,
            grade=int(grade),
            mode=mode,
            reviewed_at=now,
            due_before=before.due,
            due_after=after.due,
        )
    )
    session.commit()
    return card


def record_item_outcome(
    session: Session,
    user_id: int,
    key: CardKey,
    correct: bool,
    hinted: bool,
    mode: str,
    now: datetime,
) -> ReviewCard | None:
    """Feed an answered item to the review queue: a miss enters it (Again); an item already in
    it is graded (right Good, right with a hint Hard); a right answer to an item never missed
    changes nothing."""
    if correct and _card(session, user_id, key) is None:
        return None
    return grade(session, user_id, key, grade_for_outcome(correct, hinted), mode, now)


def due_cards(
    session: Session,
    user_id: int,
    now: datetime,
    source: CardSource | None = None,
    topic: str | None = None,
    limit: int = 100,
) -> list[ReviewCard]:
    """The learner's cards due at `now`, most overdue first."""
    query = select(ReviewCard).where(ReviewCard.user_id == user_id, ReviewCard.due <= now)
    if source is not None:
        query = query.where(ReviewCard.source == source)
    if topic is not None:
        query = query.where(ReviewCard.topic == topic)
    return list(session.exec(query.order_by(col(ReviewCard.due)).limit(limit)))


def due_count(
    session: Session, user_id: int, now: datetime, source: CardSource | None = None
) -> int:
    """How many of the learner's cards are due at `now` (one COUNT query)."""
    query = select(func.count()).select_from(ReviewCard)
    query = query.where(ReviewCard.user_id == user_id, ReviewCard.due <= now)
    if source is not None:
        query = query.where(ReviewCard.source == source)
    return int(session.exec(query).one())


def due_by_topic(
    session: Session, user_id: int, now: datetime, source: CardSource | None = None
) -> dict[str, int]:
    """Due cards per topic (one GROUP BY query)."""
    query = select(ReviewCard.topic, func.count()).where(
        ReviewCard.user_id == user_id, ReviewCard.due <= now
    )
    if source is not None:
        query = query.where(ReviewCard.source == source)
    return {topic: int(count) for topic, count in session.exec(query.group_by(ReviewCard.topic))}


def known_cards(session: Session, user_id: int, source: CardSource, deck_id: str) -> set[str]:
    """Ids of the deck's cards the learner has seen at least once."""
    query = select(ReviewCard.card_id).where(
        ReviewCard.user_id == user_id, ReviewCard.source == source, ReviewCard.deck_id == deck_id
    )
    return set(session.exec(query))


def reviewed_since(
    session: Session, user_id: int, source: CardSource, since: datetime, topic: str | None = None
) -> list[ReviewCard]:
    """The learner's cards of this source last reviewed at or after `since` (of one topic)."""
    query = select(ReviewCard).where(
        ReviewCard.user_id == user_id,
        ReviewCard.source == source,
        col(ReviewCard.last_review) >= since,
    )
    if topic is not None:
        query = query.where(ReviewCard.topic == topic)
    return list(session.exec(query))


def new_cards_today(session: Session, user_id: int, deck_id: str, now: datetime) -> int:
    """How many flashcards of this deck the learner first saw today (UTC): the new-card limit."""
    midnight = datetime.combine(now.date(), time(0), tzinfo=now.tzinfo)
    query = (
        select(func.count())
        .select_from(ReviewCard)
        .where(
            ReviewCard.user_id == user_id,
            ReviewCard.source == CardSource.FLASHCARD,
            ReviewCard.deck_id == deck_id,
            col(ReviewCard.created_at) >= midnight,
            col(ReviewCard.created_at) < midnight + timedelta(days=1),
        )
    )
    return int(session.exec(query).one())


def _card(session: Session, user_id: int, key: CardKey) -> ReviewCard | None:
    return session.exec(
        select(ReviewCard).where(
            ReviewCard.user_id == user_id,
            ReviewCard.source == key.source,
            ReviewCard.deck_id == key.deck_id,
            ReviewCard.card_id == key.card_id,
        )
    ).first()


def _new_card(session: Session, user_id: int, key: CardKey, now: datetime) -> ReviewCard:
    state = CardState.new(now)
    card = ReviewCard(
        user_id=user_id,
        source=key.source,
        topic=key.topic,
        deck_id=key.deck_id,
        card_id=key.card_id,
        state=state.state,
        step=state.step,
        due=state.due,
        created_at=now,
    )
    session.add(card)
    try:
        session.flush()
    except IntegrityError:
        # The same learner graded the same new card twice at once (two tabs): use the one that
        # won. Under a writer transaction on SQLite this cannot happen; on PostgreSQL it can.
        session.rollback()
        begin_write(session)
        existing = _card(session, user_id, key)
        assert existing is not None
        return existing
    return card

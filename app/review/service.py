"""Review cards in the database: grade one (creating it on first sight), list and count due ones.

Services commit; every write starts a writer transaction (app.db.begin_write) first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta

from sqlalchemy import bindparam, func
from sqlalchemy import select as select_columns
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
    card, _log = grade_logged(session, user_id, key, grade, mode, now)
    return card


def grade_logged(
    session: Session, user_id: int, key: CardKey, grade: Grade, mode: str, now: datetime
) -> tuple[ReviewCard, ReviewLog]:
    """As grade(), and also return the review's log (the one undo_last() would undo)."""
    begin_write(session)
    card = _card(session, user_id, key)
    created = card is None
    if card is None:
        card, created = _new_card(session, user_id, key, now)
    before = state_of(card)
    after = review(before, grade, now)
    card.state, card.step = after.state, after.step
    card.stability, card.difficulty = after.stability, after.difficulty
    card.due, card.last_review = after.due, after.last_review
    assert card.id is not None
    session.add(card)
    log = ReviewLog(
        review_card_id=card.id,
        user_id=user_id,
        grade=int(grade),
        mode=mode,
        reviewed_at=now,
        due_before=before.due,
        due_after=after.due,
        state_before=before.state,
        step_before=before.step,
        stability_before=before.stability,
        difficulty_before=before.difficulty,
        last_review_before=before.last_review,
        created_card=created,
    )
    session.add(log)
    session.commit()
    return card, log


def state_of(card: ReviewCard) -> CardState:
    """The scheduling state of a stored card."""
    return CardState(card.state, card.step, card.stability, card.difficulty, card.due,
                     card.last_review)  # fmt: skip


def last_log(session: Session, user_id: int, mode: str) -> ReviewLog | None:
    """The learner's latest review in this mode."""
    query = select(ReviewLog).where(ReviewLog.user_id == user_id, ReviewLog.mode == mode)
    return session.exec(query.order_by(col(ReviewLog.id).desc()).limit(1)).first()


def undoable(session: Session, log: ReviewLog) -> bool:
    """Whether this review can be undone: its learner's latest in its mode, its card's latest,
    and written with the state before it."""
    if log.state_before is None and not log.created_card:
        return False
    latest = last_log(session, log.user_id, log.mode)
    card_latest = session.exec(
        select(func.max(ReviewLog.id)).where(ReviewLog.review_card_id == log.review_card_id)
    ).one()
    return latest is not None and latest.id == log.id == card_latest


def undo_last(session: Session, user_id: int, mode: str, log_id: int) -> CardKey:
    """Undo the learner's review `log_id` if it is still their latest in `mode` (else a
    LookupError; see undoable()): the card gets back exactly the state it had before (a card
    that review created is deleted: new again) and the log is deleted; commit. Return what the
    card stands for."""
    begin_write(session)
    log = session.get(ReviewLog, log_id)
    if log is None or log.user_id != user_id or log.mode != mode or not undoable(session, log):
        session.rollback()
        raise LookupError("That grade can no longer be undone.")
    card = session.get(ReviewCard, log.review_card_id)
    assert card is not None
    key = CardKey(card.source, card.topic, card.deck_id, card.card_id)
    session.delete(log)
    session.flush()
    if log.created_card:
        session.delete(card)
        session.commit()
        return key
    assert log.state_before is not None
    card.state, card.step = log.state_before, log.step_before
    card.stability, card.difficulty = log.stability_before, log.difficulty_before
    card.due, card.last_review = log.due_before, log.last_review_before
    session.add(card)
    session.commit()
    return key


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
    if correct and not _has_card(session, user_id, key):
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


def known_card_keys(
    session: Session, user_id: int, source: CardSource, topic: str | None = None
) -> set[tuple[str, str]]:
    """(deck, id) of the cards of this source (of one topic) the learner has seen."""
    query = select(ReviewCard.deck_id, ReviewCard.card_id).where(
        ReviewCard.user_id == user_id, ReviewCard.source == source
    )
    if topic is not None:
        query = query.where(ReviewCard.topic == topic)
    return {(deck, card) for deck, card in session.exec(query)}


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


def new_cards_today(session: Session, user_id: int, deck_id: str | None, now: datetime) -> int:
    """How many flashcards of this deck (None: of any deck) the learner first saw today (UTC):
    the new-card limit."""
    midnight = datetime.combine(now.date(), time(0), tzinfo=now.tzinfo)
    query = (
        select(func.count())
        .select_from(ReviewCard)
        .where(
            ReviewCard.user_id == user_id,
            ReviewCard.source == CardSource.FLASHCARD,
            col(ReviewCard.created_at) >= midnight,
            col(ReviewCard.created_at) < midnight + timedelta(days=1),
        )
    )
    if deck_id is not None:
        query = query.where(ReviewCard.deck_id == deck_id)
    return int(session.exec(query).one())


def new_cards_since(session: Session, user_id: int, since: datetime) -> int:
    """How many flashcards of any topic the learner first saw at or after `since` (the start
    of their day): the one new-card limit, for /cards and every topic's deck alike."""
    query = select(func.count()).select_from(ReviewCard)
    query = query.where(
        ReviewCard.user_id == user_id,
        ReviewCard.source == CardSource.FLASHCARD,
        col(ReviewCard.created_at) >= since,
    )
    return int(session.exec(query).one())


def _card(session: Session, user_id: int, key: CardKey) -> ReviewCard | None:
    return session.exec(_CARD, params=_card_params(user_id, key)).first()


def _has_card(session: Session, user_id: int, key: CardKey) -> bool:
    """Whether the learner has a card for `key`: one prebuilt query on the session's
    connection (every right answer of a timed set asks it), no ORM object made."""
    found = session.connection().execute(_HAS_CARD, _card_params(user_id, key)).first()
    return found is not None


def _card_params(user_id: int, key: CardKey) -> dict[str, object]:
    return {
        "user_id": user_id,
        "source": key.source,
        "deck_id": key.deck_id,
        "card_id": key.card_id,
    }


# Built once (the statement's construction cost more than running it).
_CARD_KEY = (
    col(ReviewCard.user_id) == bindparam("user_id"),
    col(ReviewCard.source) == bindparam("source"),
    col(ReviewCard.deck_id) == bindparam("deck_id"),
    col(ReviewCard.card_id) == bindparam("card_id"),
)
_CARD = select(ReviewCard).where(*_CARD_KEY)
_HAS_CARD = select_columns(col(ReviewCard.id)).where(*_CARD_KEY).limit(1)


def _new_card(
    session: Session, user_id: int, key: CardKey, now: datetime
) -> tuple[ReviewCard, bool]:
    """The card made for `key`, and True; or, when another request made it first, that one and
    False (undoing this review then must not delete it)."""
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
        return existing, False
    return card, True


def next_due(
    session: Session, user_id: int, after: datetime, source: CardSource, topic: str | None = None
) -> ReviewCard | None:
    """The learner's card of this source (of one topic) due soonest after `after`."""
    query = select(ReviewCard).where(
        ReviewCard.user_id == user_id, ReviewCard.source == source, ReviewCard.due > after
    )
    if topic is not None:
        query = query.where(ReviewCard.topic == topic)
    return session.exec(query.order_by(col(ReviewCard.due)).limit(1)).first()


def card_by_id(session: Session, card_id: int) -> ReviewCard | None:
    """A review card by its row id."""
    return session.get(ReviewCard, card_id)

"""Review cards in a real database (SQLite and PostgreSQL): misses enter the queue, every review
is logged, due counts come from SQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

from app.accounts.models import User
from app.db import make_engine, write_session
from app.review import service as review
from app.review.models import CardSource, ReviewCard, ReviewLog
from app.review.scheduling import Grade

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
MISSED = review.CardKey(CardSource.ITEM, "ddp", "ddp-mastery", "bucket-size")
CARD = review.CardKey(CardSource.FLASHCARD, "ddp", "ddp", "what-is-a-rank")


@pytest.fixture
def session(database_url: str) -> Iterator[Session]:
    engine = make_engine(database_url)
    with write_session(engine) as db:
        yield db
    engine.dispose()


@pytest.fixture
def learner(session: Session) -> int:
    user = User(created_at=NOW)
    session.add(user)
    session.commit()
    assert user.id is not None
    return user.id


def test_a_missed_item_enters_the_queue_and_a_right_one_does_not(
    session: Session, learner: int
) -> None:
    other = review.CardKey(CardSource.ITEM, "ddp", "ddp-mastery", "no-sync")
    assert review.record_item_outcome(session, learner, other, True, False, "timed", NOW) is None
    card = review.record_item_outcome(session, learner, MISSED, False, False, "timed", NOW)
    assert card is not None and card.due == NOW + timedelta(minutes=1)
    assert review.due_count(session, learner, NOW) == 0
    assert review.due_count(session, learner, NOW + timedelta(minutes=1)) == 1
    # Answered right later (with a hint): the same card is graded Hard, not a second card.
    later = NOW + timedelta(minutes=5)
    again = review.record_item_outcome(session, learner, MISSED, True, True, "practice", later)
    assert again is not None and again.id == card.id
    logs = session.exec(select(ReviewLog).order_by(ReviewLog.id)).all()
    assert [(log.grade, log.mode) for log in logs] == [(1, "timed"), (2, "practice")]
    assert logs[1].reviewed_at == later and logs[1].due_before == NOW + timedelta(minutes=1)


def test_due_cards_come_most_overdue_first_and_count_per_topic(
    session: Session, learner: int
) -> None:
    review.grade(session, learner, CARD, Grade.AGAIN, "flashcards", NOW)
    review.grade(session, learner, MISSED, Grade.AGAIN, "review", NOW + timedelta(seconds=30))
    other_topic = review.CardKey(CardSource.FLASHCARD, "collectives", "collectives", "x")
    review.grade(session, learner, other_topic, Grade.AGAIN, "flashcards", NOW)
    later = NOW + timedelta(hours=1)
    due = review.due_cards(session, learner, later, topic="ddp")
    assert [card.card_id for card in due] == ["what-is-a-rank", "bucket-size"]
    assert review.due_by_topic(session, learner, later) == {"ddp": 2, "collectives": 1}
    assert review.due_count(session, learner, later, CardSource.FLASHCARD) == 2


def test_new_flashcards_are_counted_per_utc_day(session: Session, learner: int) -> None:
    review.grade(session, learner, CARD, Grade.GOOD, "flashcards", NOW)
    second = review.CardKey(CardSource.FLASHCARD, "ddp", "ddp", "world-size")
    review.grade(session, learner, second, Grade.GOOD, "flashcards", NOW + timedelta(hours=1))
    assert review.new_cards_today(session, learner, "ddp", NOW + timedelta(hours=2)) == 2
    assert review.new_cards_today(session, learner, "ddp", NOW + timedelta(days=1)) == 0
    assert review.known_cards(session, learner, CardSource.FLASHCARD, "ddp") == {
        "what-is-a-rank",
        "world-size",
    }


def _columns(card: ReviewCard) -> tuple[object, ...]:
    return (card.state, card.step, card.stability, card.difficulty, card.due, card.last_review)


def test_undoing_the_last_grade_restores_the_cards_state_exactly(
    session: Session, learner: int
) -> None:
    review.grade(session, learner, CARD, Grade.GOOD, "flashcards", NOW)
    card = review.grade(session, learner, CARD, Grade.GOOD, "flashcards", NOW + timedelta(hours=1))
    before = _columns(card)
    later = card.due + timedelta(days=2)
    _card, log = review.grade_logged(session, learner, CARD, Grade.EASY, "flashcards", later)
    changed = session.get(ReviewCard, card.id)
    assert changed is not None and _columns(changed) != before
    assert log.id is not None
    assert review.undo_last(session, learner, "flashcards", log.id) == CARD
    session.expire_all()
    restored = session.get(ReviewCard, card.id)
    assert restored is not None and _columns(restored) == before
    assert session.get(ReviewLog, log.id) is None  # the undone review is no longer in the log
    assert len(session.exec(select(ReviewLog)).all()) == 2


def test_undoing_a_new_cards_first_grade_makes_it_new_again(session: Session, learner: int) -> None:
    _card, log = review.grade_logged(session, learner, CARD, Grade.AGAIN, "flashcards", NOW)
    assert log.created_card and review.new_cards_today(session, learner, "ddp", NOW) == 1
    assert log.id is not None
    review.undo_last(session, learner, "flashcards", log.id)
    assert review.known_cards(session, learner, CardSource.FLASHCARD, "ddp") == set()
    assert review.new_cards_today(session, learner, "ddp", NOW) == 0


def test_only_the_learners_latest_grade_can_be_undone(session: Session, learner: int) -> None:
    _card, first = review.grade_logged(session, learner, CARD, Grade.GOOD, "flashcards", NOW)
    second_card = review.CardKey(CardSource.FLASHCARD, "ddp", "ddp", "world-size")
    _card, second = review.grade_logged(
        session, learner, second_card, Grade.GOOD, "flashcards", NOW
    )
    assert first.id is not None and second.id is not None
    assert not review.undoable(session, first) and review.undoable(session, second)
    with pytest.raises(LookupError):
        review.undo_last(session, learner, "flashcards", first.id)
    other = User(created_at=NOW)
    session.add(other)
    session.commit()
    assert other.id is not None
    with pytest.raises(LookupError):  # another learner's grade is not theirs to undo
        review.undo_last(session, other.id, "flashcards", second.id)
    review.undo_last(session, learner, "flashcards", second.id)
    session.expire_all()
    latest = session.get(ReviewLog, first.id)
    assert latest is not None and review.undoable(session, latest)  # now the latest

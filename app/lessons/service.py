"""Lesson progress in the database: predictions (recorded before the run is shown) and the check
that completes a lesson. Only this module writes the lesson_progress table."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.db import begin_write
from app.lessons.models import CHECK, LessonProgress, example_step


def steps(session: Session, user_id: int, topic_id: str) -> dict[str, LessonProgress]:
    """The learner's rows for one topic's lesson, by step."""
    rows = session.exec(
        select(LessonProgress).where(
            LessonProgress.user_id == user_id, LessonProgress.topic_id == topic_id
        )
    ).all()
    return {row.step: row for row in rows}


def prediction(
    session: Session, user_id: int, topic_id: str, example_id: str
) -> LessonProgress | None:
    """The learner's prediction for one example, if made."""
    return session.exec(
        select(LessonProgress).where(
            LessonProgress.user_id == user_id,
            LessonProgress.topic_id == topic_id,
            LessonProgress.step == example_step(example_id),
        )
    ).first()


def record_prediction(
    session: Session,
    user_id: int,
    topic_id: str,
    example_id: str,
    answer: str,
    correct: bool,
    now: datetime,
) -> LessonProgress:
    """Keep the learner's prediction and commit; a second one changes nothing: the first was
    made before the run, a later one could copy what the run showed."""
    begin_write(session)
    existing = prediction(session, user_id, topic_id, example_id)
    if existing is not None:
        return existing
    row = LessonProgress(
        user_id=user_id,
        topic_id=topic_id,
        step=example_step(example_id),
        answer=answer,
        correct=correct,
        completed_at=now,
        answered_at=now,
    )
    session.add(row)
    try:
        session.commit()
    except IntegrityError:  # the same prediction sent twice at once: the first one stands
        session.rollback()
        existing = prediction(session, user_id, topic_id, example_id)
        assert existing is not None
        return existing
    return row


def check_row(session: Session, user_id: int, topic_id: str) -> LessonProgress | None:
    """The learner's row of the lesson's check (its tries), if they have tried it."""
    return session.exec(
        select(LessonProgress).where(
            LessonProgress.user_id == user_id,
            LessonProgress.topic_id == topic_id,
            LessonProgress.step == CHECK,
        )
    ).first()


def record_check(
    session: Session,
    user_id: int,
    topic_id: str,
    tries: str,
    passed: bool,
    now: datetime,
) -> LessonProgress:
    """Keep the check's tries (app.lessons.rules.CheckTries, as stored) and commit; passing it
    completes the lesson (a later failed try does not undo that)."""
    begin_write(session)
    row = check_row(session, user_id, topic_id)
    if row is None:
        row = LessonProgress(
            user_id=user_id,
            topic_id=topic_id,
            step=CHECK,
            answer="",
            correct=False,
            answered_at=now,
        )
    row.answer = tries
    row.correct = passed
    row.answered_at = now
    if passed and row.completed_at is None:
        row.completed_at = now
    session.add(row)
    session.commit()
    return row


def completed_topics(session: Session, user_id: int) -> set[str]:
    """The topics whose lesson this learner has completed (passed its check)."""
    rows = session.exec(
        select(LessonProgress.topic_id).where(
            LessonProgress.user_id == user_id,
            LessonProgress.step == CHECK,
            col(LessonProgress.completed_at).is_not(None),
        )
    ).all()
    return set(rows)

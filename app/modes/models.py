"""Tables of the untimed modes: every answer given in practice, a quick quiz, explain-it or
review, and the quick quizzes themselves."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Text, UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime


class Quiz(SQLModel, table=True):
    """A quick quiz: questions drawn from one topic's items and cards, answered once each."""

    __tablename__ = "quiz"

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    topic: str = Field(max_length=100)
    # JSON list of [deck, id] pairs, in the order asked.
    questions: str = Field(sa_column=Column(Text, nullable=False))
    total: int
    correct: int = 0
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class ModeAnswer(SQLModel, table=True):
    """One answer given outside the timed challenge (free text included, hence Text)."""

    __tablename__ = "mode_answer"
    __table_args__ = (
        UniqueConstraint("quiz_id", "position"),  # a quiz question is answered once
        Index("ix_mode_answer_user_topic_mode", "user_id", "topic", "mode"),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id")
    mode: str = Field(max_length=20)  # practice, quiz, explain, review
    topic: str = Field(max_length=100)
    deck_id: str = Field(max_length=100)
    item_id: str = Field(max_length=100)
    answer: str = Field(sa_column=Column(Text, nullable=False))
    correct: bool
    hinted: bool = False
    points: int | None = Field(default=None)  # explain-it: concepts covered
    quiz_id: int | None = Field(default=None, foreign_key="quiz.id")
    position: int | None = Field(default=None)  # the question's place in its quiz
    answered_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))

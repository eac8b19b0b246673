"""Tables for spaced repetition: one card per learner and thing to recall, and every review."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime, string_enum


class CardSource(StrEnum):
    """What a review card stands for."""

    FLASHCARD = "flashcard"  # an authored front/back card of a topic
    ITEM = "item"  # a question the learner once got wrong, in any mode


class ReviewCard(SQLModel, table=True):
    """One learner's FSRS card for one flashcard or item (its scheduling state)."""

    __tablename__ = "review_card"
    __table_args__ = (
        UniqueConstraint("user_id", "source", "deck_id", "card_id"),
        Index("ix_review_card_user_due", "user_id", "due"),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id")
    source: CardSource = Field(sa_column=Column(string_enum(CardSource), nullable=False))
    topic: str = Field(max_length=100)
    deck_id: str = Field(max_length=100)  # the topic's deck or the item's set
    card_id: str = Field(max_length=100)  # the flashcard's or the item's id
    state: int
    step: int | None = Field(default=None)
    stability: float | None = Field(default=None)
    difficulty: float | None = Field(default=None)
    due: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    last_review: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class ReviewLog(SQLModel, table=True):
    """Every review ever made: the grade, where it came from, when (UTC)."""

    __tablename__ = "review_log"

    id: int | None = Field(default=None, primary_key=True)
    review_card_id: int = Field(foreign_key="review_card.id", index=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    grade: int
    mode: str = Field(max_length=20)  # flashcards, review, practice, timed, quiz, explain
    reviewed_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    due_before: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    due_after: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    # The card's state before this review, so that the learner's last grade can be undone
    # exactly; created_card: this review created the card (undo deletes it: new again).
    # Logs from before these columns existed have none and cannot be undone.
    state_before: int | None = Field(default=None)
    step_before: int | None = Field(default=None)
    stability_before: float | None = Field(default=None)
    difficulty_before: float | None = Field(default=None)
    last_review_before: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    created_card: bool = Field(default=False)

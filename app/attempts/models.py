"""Tables for attempts: a learner's run through a set, its questions and every answer sent."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint, text
from sqlmodel import AutoString, Column, Field, SQLModel

from app.attempts.rules import ItemStatus
from app.db import UTCDateTime, string_enum

# At most one unfinished attempt per learner and set: parallel "Start" clicks must resume one
# attempt, and only the database can decide that race (PostgreSQL and SQLite both index WHERE).
_UNFINISHED = text("finished_at IS NULL")


class SetAttempt(SQLModel, table=True):
    """One learner taking one set; refers to the set by its stable id."""

    __tablename__ = "set_attempt"
    __table_args__ = (
        Index(
            "uq_set_attempt_one_unfinished",
            "user_id",
            "set_id",
            unique=True,
            postgresql_where=_UNFINISHED,
            sqlite_where=_UNFINISHED,
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    set_id: str = Field(max_length=100, index=True)
    set_title: str = Field(max_length=200)
    item_ids: str = Field(max_length=4000)  # the order fixed at start, comma-separated
    # The content hash of the set's version it started on: it is served that version to the
    # end, whatever is published meanwhile (None: started before versions, served the live one).
    content_version: str | None = Field(default=None, max_length=64)
    current_position: int = Field(default=0)
    started_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    correct_count: int = Field(default=0)
    badge_earned: bool = Field(default=False)

    @property
    def item_id_list(self) -> list[str]:
        """The items' stable ids in the order they are asked."""
        return self.item_ids.split(",") if self.item_ids else []

    @property
    def finished(self) -> bool:
        """Whether every question has been closed."""
        return self.finished_at is not None


class ItemAttempt(SQLModel, table=True):
    """One question within an attempt; the server writes its start time, the deadline follows."""

    __tablename__ = "item_attempt"
    __table_args__ = (UniqueConstraint("set_attempt_id", "position"),)

    id: int | None = Field(default=None, primary_key=True)
    set_attempt_id: int = Field(foreign_key="set_attempt.id", index=True)
    item_id: str = Field(max_length=100)
    position: int
    status: ItemStatus = Field(
        default=ItemStatus.PENDING, sa_column=Column(string_enum(ItemStatus), nullable=False)
    )
    started_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    time_limit_s: float | None = Field(default=None)
    attempts_allowed: int
    attempts_used: int = Field(default=0)
    hint_shown_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    closed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    last_answer: str | None = Field(default=None, max_length=200)
    # The variant of its item this question shows, pinned at the attempt's start: a reload,
    # a resume and Run it show that one ("" for an item without parameters).
    # (The default is the database's, so that statements naming no variant store "".)
    variant_key: str = Field(
        default="", sa_column=Column(AutoString(64), nullable=False, server_default="")
    )


class ItemSighting(SQLModel, table=True):
    """The first time a learner was shown one variant of a set's item, in any mode: a badge
    counts a question only where its variant was first shown in that timed attempt."""

    __tablename__ = "item_sighting"
    __table_args__ = (UniqueConstraint("user_id", "set_id", "item_id", "variant_key"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id")
    set_id: str = Field(max_length=100)
    item_id: str = Field(max_length=100)
    variant_key: str = Field(max_length=64)
    mode: str = Field(max_length=20)  # timed, practice, review, quiz
    set_attempt_id: int | None = Field(default=None, foreign_key="set_attempt.id")
    shown_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class Submission(SQLModel, table=True):
    """Every judged answer; (item, number) is unique so an attempt can never be counted twice."""

    __tablename__ = "submission"
    __table_args__ = (
        UniqueConstraint("item_attempt_id", "number"),
        # A retried submission (same token) is stored once: its retry gets the first outcome.
        Index("uq_submission_token", "token", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    item_attempt_id: int = Field(foreign_key="item_attempt.id", index=True)
    number: int
    answer: str = Field(max_length=200)
    correct: bool
    submitted_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    token: str | None = Field(default=None, max_length=64)  # the form's submission token

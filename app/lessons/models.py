"""The lesson table: what each learner predicted for each example, and whether they passed the
lesson's check (which completes the lesson)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime

CHECK = "check"  # the step of the closing check; an example's step is "example:<id>"


def example_step(example_id: str) -> str:
    """The step name of an example's prediction."""
    return f"example:{example_id}"


class LessonProgress(SQLModel, table=True):
    """One learner's step of one topic's lesson: a prediction (kept as first given: it was
    made before the run showed the truth) or the check (its latest answers)."""

    __tablename__ = "lesson_progress"
    __table_args__ = (UniqueConstraint("user_id", "topic_id", "step"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    topic_id: str = Field(max_length=100)
    step: str = Field(max_length=120)  # "example:<id>" or "check"
    answer: str = Field(sa_column=Column(Text, nullable=False))  # prediction; check: tries (JSON)
    correct: bool
    # When the step was done: the prediction's time; the check's first passing time (or None).
    completed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    answered_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))

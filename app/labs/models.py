"""Tables of labs: a learner's draft and progress per step, and every run they made."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Text, UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime


class LabStepState(SQLModel, table=True):
    """One learner's state in one step: their draft (kept across reloads and restarts), their
    failed runs (two unlock the solution), and when the checks and the questions were passed."""

    __tablename__ = "lab_step_state"
    __table_args__ = (UniqueConstraint("user_id", "lab_id", "step_id"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id")
    lab_id: str = Field(max_length=100)
    step_id: str = Field(max_length=100)
    draft: str | None = Field(default=None, sa_column=Column(Text))
    failed_runs: int = 0
    checks_passed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    passed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    updated_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    # The lab's version (content hash) the learner's progress started on: every step is served
    # and judged by it through Reloads (None: started before versions, served the live one).
    content_version: str | None = Field(default=None, max_length=64)
    # Moved to a newer version whose step changed: the step started over then (its questions
    # answered before no longer count). The newer version the learner chose to stay off.
    restarted_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    stayed_on: str | None = Field(default=None, max_length=64)


class LabRun(SQLModel, table=True):
    """A learner's run of a step: its code, and once it ends, its result and checks (JSON)."""

    __tablename__ = "lab_run"
    __table_args__ = (Index("ix_lab_run_user_started", "user_id", "started_at"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user_account.id")
    lab_id: str = Field(max_length=100)
    step_id: str = Field(max_length=100)
    nproc: int
    code: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(max_length=20)  # running, then the run's status, stopped or unavailable
    result: str | None = Field(default=None, sa_column=Column(Text))  # the RunResult, JSON
    checks: str | None = Field(default=None, sa_column=Column(Text))  # [{says, problems}], JSON
    passed: bool = False
    started_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))

"""The table of content versions: every load of a set, topic or lab that learners may be served.

A version is identified by its content hash and keeps the content needed to serve it again, so
an attempt started on it can finish on it after a reload, a file change or a restart.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime, string_enum


class VersionStatus(StrEnum):
    """Where a version stands: served, waiting for its proofs, or replaced by a newer one."""

    LIVE = "live"
    HELD = "held"
    SUPERSEDED = "superseded"


class ContentVersion(SQLModel, table=True):
    """One version of one unit (a set, a topic or a lab), by content hash."""

    __tablename__ = "content_version"
    __table_args__ = (UniqueConstraint("kind", "unit_id", "content_hash"),)

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=10)  # set, topic or lab
    unit_id: str = Field(max_length=100, index=True)
    number: int  # v1, v2, … per unit, in the order versions were first seen
    content_hash: str = Field(max_length=64)
    path: str = Field(max_length=400)  # the file it was loaded from
    payload: str = Field(sa_column=Column(Text, nullable=False))  # the content, JSON
    status: VersionStatus = Field(
        sa_column=Column(string_enum(VersionStatus), nullable=False, index=True)
    )
    held_reason: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    published_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    # Published although its keys were not proven: who did, and learners see it marked.
    unproven: bool = False
    published_by: int | None = Field(default=None, foreign_key="user_account.id")

"""The table of verification results: which content was proven, where and when."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime, string_enum
from app.verification.rules import Verdict


class VerificationRecord(SQLModel, table=True):
    """One item verified once: its verdict for exactly this content, and the environment."""

    __tablename__ = "verification_record"
    # The learner page asks for the latest record of (set, item, content hash).
    __table_args__ = (
        Index("ix_verification_record_content", "set_id", "item_id", "content_hash", "verified_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    set_id: str = Field(max_length=100)
    item_id: str = Field(max_length=100)
    # sha256 of the item's full schema dump and its code: any edit makes the record stale.
    content_hash: str = Field(max_length=64)
    verdict: Verdict = Field(sa_column=Column(string_enum(Verdict), nullable=False))
    torch: str | None = Field(default=None, max_length=64)
    backend: str | None = Field(default=None, max_length=20)
    device: str | None = Field(default=None, max_length=40)
    nproc: int | None = Field(default=None)
    python: str | None = Field(default=None, max_length=40)
    verified_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    duration_ms: int

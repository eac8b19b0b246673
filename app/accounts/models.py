"""Tables for people and their browser sessions."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime, string_enum


class Role(StrEnum):
    """What a user may do; staff routes check it."""

    LEARNER = "learner"
    INSTRUCTOR = "instructor"
    ADMIN = "admin"


class TimeAccommodation(StrEnum):
    """Extra time an admin grants a learner (WCAG 2.2.1 Timing Adjustable)."""

    STANDARD = "standard"
    EXTENDED_1_5 = "x1.5"
    EXTENDED_2 = "x2"
    UNTIMED = "untimed"

    @property
    def multiplier(self) -> float | None:
        """Factor applied to every time limit; None means no limit at all."""
        return {"standard": 1.0, "x1.5": 1.5, "x2": 2.0, "untimed": None}[self.value]

    @property
    def label(self) -> str:
        """How the accommodation is shown to people."""
        return {
            "standard": "standard time",
            "x1.5": "time × 1.5",
            "x2": "time × 2",
            "untimed": "untimed",
        }[self.value]


class User(SQLModel, table=True):
    """A learner or staff member; a guest has no username until they create an account."""

    __tablename__ = "user_account"

    id: int | None = Field(default=None, primary_key=True)
    username: str | None = Field(default=None, max_length=40, unique=True, index=True)
    password_hash: str | None = Field(default=None, max_length=200)
    role: Role = Field(default=Role.LEARNER, sa_column=Column(string_enum(Role), nullable=False))
    is_guest: bool = Field(default=True)
    time_accommodation: TimeAccommodation = Field(
        default=TimeAccommodation.STANDARD,
        sa_column=Column(string_enum(TimeAccommodation), nullable=False, server_default="standard"),
    )
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))

    @property
    def display_name(self) -> str:
        """Return the name shown in the header."""
        return self.username or "Guest"

    @property
    def is_staff(self) -> bool:
        """Whether the user is an instructor or an admin."""
        return self.role in (Role.INSTRUCTOR, Role.ADMIN)


class WebSession(SQLModel, table=True):
    """A browser session; only a hash of the cookie's token is stored."""

    __tablename__ = "web_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    expires_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))

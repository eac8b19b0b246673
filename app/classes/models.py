"""Tables for classes, their members, assignments and per-learner extensions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime


class Klass(SQLModel, table=True):
    """A class (section) an instructor runs; learners join it with its code."""

    __tablename__ = "class_section"
    __table_args__ = (
        UniqueConstraint("lti_platform_issuer", "lti_deployment_id", "lti_context_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    title: str = Field(max_length=200)
    join_code: str = Field(max_length=16, unique=True, index=True)
    created_by: int = Field(foreign_key="user_account.id")
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    archived: bool = Field(default=False)
    lti_platform_issuer: str | None = Field(default=None, max_length=300)
    lti_deployment_id: str | None = Field(default=None, max_length=300)
    lti_context_id: str | None = Field(default=None, max_length=300)


class Membership(SQLModel, table=True):
    """A user in a class: role "learner" or "instructor"; source code, roster, lti or staff."""

    __tablename__ = "class_membership"
    __table_args__ = (UniqueConstraint("class_id", "user_id"),)

    id: int | None = Field(default=None, primary_key=True)
    class_id: int = Field(foreign_key="class_section.id", index=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    role: str = Field(default="learner", max_length=20)
    source: str = Field(default="code", max_length=20)
    student_id: str | None = Field(default=None, max_length=100)  # from the roster (SIS id)
    email: str | None = Field(default=None, max_length=200)
    name: str | None = Field(default=None, max_length=200)
    joined_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class Assignment(SQLModel, table=True):
    """A set (or a whole topic) given to a class with its dates, an attempt limit and a late
    rule."""

    __tablename__ = "class_assignment"

    id: int | None = Field(default=None, primary_key=True)
    class_id: int = Field(foreign_key="class_section.id", index=True)
    set_id: str = Field(max_length=100, index=True)  # "" for a topic assignment
    topic_id: str | None = Field(default=None, max_length=100)  # a topic assignment's topic
    title: str = Field(max_length=200)
    open_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    due_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    close_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    attempt_limit: int | None = Field(default=None)  # None: no limit
    late_penalty_per_day: float = Field(default=0.0)  # percent a day after due, until close


class Extension(SQLModel, table=True):
    """One learner's exception for one assignment: more time per question, later dates."""

    __tablename__ = "class_extension"
    __table_args__ = (UniqueConstraint("assignment_id", "user_id"),)

    id: int | None = Field(default=None, primary_key=True)
    assignment_id: int = Field(foreign_key="class_assignment.id", index=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)
    time_multiplier: float | None = Field(default=1.0)  # None: untimed
    due_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    close_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class ClassGroup(SQLModel, table=True):
    """A named group of a class's learners ("accessibility ×1.5", "lab section B")."""

    __tablename__ = "class_group"
    __table_args__ = (UniqueConstraint("class_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    class_id: int = Field(foreign_key="class_section.id", index=True)
    name: str = Field(max_length=100)


class GroupMember(SQLModel, table=True):
    """A learner in a group."""

    __tablename__ = "class_group_member"
    __table_args__ = (UniqueConstraint("group_id", "user_id"),)

    id: int | None = Field(default=None, primary_key=True)
    group_id: int = Field(foreign_key="class_group.id", index=True)
    user_id: int = Field(foreign_key="user_account.id", index=True)


class GroupExtension(SQLModel, table=True):
    """A group's exception for one assignment; a learner's own extension wins over it."""

    __tablename__ = "class_group_extension"
    __table_args__ = (UniqueConstraint("assignment_id", "group_id"),)

    id: int | None = Field(default=None, primary_key=True)
    assignment_id: int = Field(foreign_key="class_assignment.id", index=True)
    group_id: int = Field(foreign_key="class_group.id", index=True)
    time_multiplier: float | None = Field(default=1.0)  # None: untimed
    due_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    close_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))

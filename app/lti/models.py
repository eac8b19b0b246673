"""Tables for LTI 1.3: platforms, the tool's keys, launches in flight, accounts, links, scores."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Text, UniqueConstraint
from sqlmodel import Column, Field, SQLModel

from app.db import UTCDateTime


class LtiPlatform(SQLModel, table=True):
    """An LMS the operator trusts: its issuer, our client id there, and its endpoints."""

    __tablename__ = "lti_platform"
    __table_args__ = (UniqueConstraint("issuer", "client_id"),)

    id: int | None = Field(default=None, primary_key=True)
    issuer: str = Field(max_length=300, index=True)
    client_id: str = Field(max_length=300)
    deployment_ids: str = Field(max_length=2000)  # space-separated: the deployments allowed
    auth_login_url: str = Field(max_length=500)
    auth_token_url: str = Field(max_length=500)
    jwks_url: str = Field(max_length=500)
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class LtiToolKey(SQLModel, table=True):
    """One of the tool's RSA keys: the newest signs, the newer ones are published (rotation)."""

    __tablename__ = "lti_tool_key"

    id: int | None = Field(default=None, primary_key=True)
    kid: str = Field(max_length=64, unique=True)
    private_pem: str = Field(sa_column=Column(Text(), nullable=False))
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


class LtiLaunchState(SQLModel, table=True):
    """A launch between its login initiation and the learner's arrival: state and nonce are
    single use and short-lived; the verified claims wait here for the browser that began it."""

    __tablename__ = "lti_launch_state"

    id: int | None = Field(default=None, primary_key=True)
    state: str = Field(max_length=64, unique=True)
    nonce: str = Field(max_length=64, unique=True)
    platform_id: int = Field(foreign_key="lti_platform.id")
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    claims: str | None = Field(default=None, sa_column=Column(Text()))  # JSON, once verified
    verified_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    entered_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class LtiAccount(SQLModel, table=True):
    """A platform's user (issuer, sub) and the RankLab account they arrive as."""

    __tablename__ = "lti_account"
    __table_args__ = (UniqueConstraint("issuer", "subject"),)

    id: int | None = Field(default=None, primary_key=True)
    issuer: str = Field(max_length=300)
    subject: str = Field(max_length=300)
    user_id: int = Field(foreign_key="user_account.id", index=True)


class LtiContext(SQLModel, table=True):
    """A class's course in the LMS: where its roster (NRPS) and line items (AGS) live."""

    __tablename__ = "lti_context"

    id: int | None = Field(default=None, primary_key=True)
    class_id: int = Field(foreign_key="class_section.id", unique=True)
    platform_id: int = Field(foreign_key="lti_platform.id")
    memberships_url: str | None = Field(default=None, max_length=500)
    lineitems_url: str | None = Field(default=None, max_length=500)


class LtiResourceLink(SQLModel, table=True):
    """A link in the LMS to a set or topic, its assignment and the line item its scores go to."""

    __tablename__ = "lti_resource_link"
    __table_args__ = (UniqueConstraint("platform_id", "link_id"),)

    id: int | None = Field(default=None, primary_key=True)
    platform_id: int = Field(foreign_key="lti_platform.id")
    link_id: str = Field(max_length=300)
    class_id: int | None = Field(default=None, foreign_key="class_section.id", index=True)
    assignment_id: int | None = Field(default=None, foreign_key="class_assignment.id", index=True)
    lineitem_url: str | None = Field(default=None, max_length=500)


class LtiScoreOutbox(SQLModel, table=True):
    """A score owed to the LMS, written in the transaction that finished the attempt; the
    sender deletes nothing: it marks a row sent, or counts the try and waits to try again."""

    __tablename__ = "lti_score_outbox"

    id: int | None = Field(default=None, primary_key=True)
    link_id: int = Field(foreign_key="lti_resource_link.id")
    user_id: int = Field(foreign_key="user_account.id")
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    next_try_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False, index=True))
    tries: int = Field(default=0)
    last_error: str | None = Field(default=None, max_length=500)
    sent_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), index=True))
    score_sent: float | None = Field(default=None)

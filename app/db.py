"""The database engine and sessions: SQLite by default, PostgreSQL in production."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlalchemy import DateTime, Enum, event, make_url
from sqlalchemy.engine import Engine
from sqlalchemy.types import TypeDecorator
from sqlmodel import Session, create_engine


class UTCDateTime(TypeDecorator[datetime]):
    """Store naive UTC, hand back aware UTC: SQLite keeps no time zone, PostgreSQL would convert."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("refusing a naive datetime: pass an aware UTC time")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


def string_enum(enum_type: type[StrEnum]) -> Enum:
    """Store an enum's values as plain strings: no PostgreSQL ENUM type to migrate later."""
    return Enum(
        enum_type,
        native_enum=False,
        create_constraint=False,
        length=20,
        values_callable=lambda members: [member.value for member in members],
    )


def make_engine(url: str) -> Engine:
    """Create an engine; on SQLite, wait for locks and take the write lock at BEGIN."""
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)  # var/ on a fresh checkout
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, open transactions, so that BEGIN below is ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # BEGIN IMMEDIATE takes the write lock up front: two transactions that both read and then
        # write can never deadlock into SQLITE_BUSY; the second simply waits its turn.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def session_scope(engine: Engine) -> Iterator[Session]:
    """Yield a session that is closed afterwards (services decide when to commit)."""
    with Session(engine, expire_on_commit=False) as session:
        yield session


def utcnow() -> datetime:
    """Return the current time, aware, in UTC."""
    return datetime.now(UTC)

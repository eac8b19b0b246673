"""Page reads on the driver (app.reads): the values the ORM would load, as detached instances,
parameters converted as SQLAlchemy converts them, and no connection or transaction left behind,
on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import (
    bindparam,
    case,
    column,
    func,
    inspect,
    literal_column,
    table,
)
from sqlalchemy import select as select_columns
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, col

from app import reads
from app.accounts import service as accounts
from app.accounts.models import Role, TimeAccommodation, User
from app.attempts import service as attempts
from app.attempts.models import SetAttempt
from app.attempts.rules import ItemStatus
from app.challenges.loader import load_path
from app.challenges.schema import ChallengeSet
from app.db import dispose, make_engine
from tests.conftest import TEST_CHALLENGES

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
EAST_COAST = timezone(timedelta(hours=-5))
USERS = User.__table__  # type: ignore[attr-defined]
CREATED_BEFORE = reads.Query(
    select_columns(
        USERS.c.id,
        case((USERS.c.is_guest, literal_column("'guest'")), else_="account"),
        USERS.c.role,
        USERS.c.created_at,
    )
    .where(USERS.c.created_at < bindparam("before"))
    .order_by(USERS.c.id)
)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = make_engine(database_url)
    yield made
    asyncio.run(dispose(made))  # and its LoopEngines' connections, on PostgreSQL


def basics() -> ChallengeSet:
    return next(
        loaded.challenge_set
        for loaded in load_path(TEST_CHALLENGES).sets
        if loaded.challenge_set.id == "test-basics"
    )


def seed(session: Session) -> tuple[User, SetAttempt]:
    """An instructor on extended time with an attempt open on its first question."""
    user = User(
        username="grace",
        is_guest=False,
        role=Role.INSTRUCTOR,
        time_accommodation=TimeAccommodation.EXTENDED_2,
        created_at=NOW,
    )
    session.add(user)
    session.commit()
    assert user.id is not None
    attempt = attempts.start_or_resume(session, user.id, basics(), NOW + timedelta(seconds=1))
    return user, attempt


def test_a_question_read_on_the_driver_equals_what_the_orm_loads(engine):
    with Session(engine, expire_on_commit=False) as session:
        user, started = seed(session)
        assert user.id is not None and started.id is not None
        with reads.Reader(engine) as reader:
            attempt, row = attempts.question_for_user(reader, started.id, 1, user.id)
        loaded_attempt = session.get(SetAttempt, started.id)
        loaded_row = attempts.item_at(session, started.id, 0)
        assert attempt.model_dump() == loaded_attempt.model_dump()  # type: ignore[union-attr]
        assert row.model_dump() == loaded_row.model_dump()
    assert inspect(attempt).detached and inspect(row).detached
    assert attempt.started_at == NOW + timedelta(seconds=1)  # aware UTC, as the ORM gives it
    assert attempt.started_at.tzinfo is not None
    assert row.status is ItemStatus.OPEN and attempt.badge_earned is False


def test_an_outer_join_that_finds_nothing_is_none_and_the_question_a_404(engine):
    with Session(engine, expire_on_commit=False) as session:
        user, started = seed(session)
    assert user.id is not None and started.id is not None
    with reads.Reader(engine) as reader:
        found = reader.first(
            attempts._QUESTION, attempt_id=started.id, user_id=user.id, position=99
        )
        assert found is not None
        attempt, row = attempts._QUESTION.instances(found)
        assert attempt.id == started.id and row is None
        with pytest.raises(attempts.NotFound, match="No such question"):
            attempts.question_for_user(reader, started.id, 100, user.id)
        with pytest.raises(attempts.NotFound, match="No such attempt"):  # not theirs
            attempts.question_for_user(reader, started.id, 1, user.id + 1)


def test_parameters_and_columns_are_converted_as_sqlalchemy_converts_them(engine):
    with Session(engine) as session:
        seed(session)
        session.add(User(role=Role.LEARNER, is_guest=True, created_at=NOW + timedelta(hours=1)))
        session.commit()
    with reads.Reader(engine) as reader:
        # An aware time is bound as the naive UTC the column stores; a CASE's literal comes along.
        early = reader.rows(CREATED_BEFORE, before=NOW + timedelta(minutes=1))
        # 11:00 UTC is 06:00 at UTC-5: after both rows (taken as 06:00 it would be before both).
        later = (NOW + timedelta(hours=2)).astimezone(EAST_COAST)
        both = reader.rows(CREATED_BEFORE, before=later)
    assert [row[1:] for row in early] == [("account", Role.INSTRUCTOR, NOW)]
    assert [row[1:] for row in both] == [
        ("account", Role.INSTRUCTOR, NOW),
        ("guest", Role.LEARNER, NOW + timedelta(hours=1)),
    ]


def test_standings_count_attempts_and_take_the_literal_defaults(engine):
    with Session(engine, expire_on_commit=False) as session:
        user, started = seed(session)
    assert user.id is not None
    with reads.Reader(engine) as reader:
        mine = attempts.standings(reader, user.id)
        one = attempts.standing(reader, user.id, "test-basics")
        none = attempts.standing(reader, user.id, "no-such-set")
    # Unfinished: best 0 (the ELSE); the path's "Continue" reads when it was started.
    expected = attempts.SetStanding(1, 0, False, started.id, started.started_at)
    assert mine == {"test-basics": expected} and one == expected and none is None


def test_a_query_refuses_what_it_cannot_run_as_compiled():
    with pytest.raises(ValueError, match="exactly their tables' columns"):
        reads.Query(select_columns(USERS.c.id), User)
    expanding = reads.Query(
        select_columns(USERS.c.id).where(col(USERS.c.id).in_(bindparam("ids", expanding=True)))
    )
    with pytest.raises(ValueError, match="IN lists"):
        expanding.compiled(sqlite.dialect())


def test_a_reader_gives_its_connection_back_and_one_within_a_session_reads_its_rows(engine):
    with reads.Reader(engine) as reader:
        assert reader.rows(CREATED_BEFORE, before=NOW) == []
        assert engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    with Session(engine) as session:
        session.add(User(role=Role.LEARNER, is_guest=True, created_at=NOW))
        session.flush()  # not committed: only this session's transaction sees it
        within = reads.Reader.within(session)
        assert len(within.rows(CREATED_BEFORE, before=NOW + timedelta(days=1))) == 1
        within.close()  # the session's connection, not the reader's: it stays in use
        with reads.Reader(engine) as outside:
            assert outside.rows(CREATED_BEFORE, before=NOW + timedelta(days=1)) == []
        assert session.in_transaction() and engine.pool.checkedout() == 1  # type: ignore[attr-defined]
        session.rollback()
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]


def test_reads_run_on_the_event_loop_and_on_a_worker_thread_only_without_loop_engines(
    engine, database_url
):
    """SQLite's reads are plain calls on the loop; PostgreSQL's await their round trips there
    (app.db.LoopEngines), unless the pool is too small to split: then a worker thread runs them."""

    def where(reader: reads.Reader) -> tuple[int, list[tuple[object, ...]]]:
        return threading.get_ident(), reader.rows(CREATED_BEFORE, before=NOW)

    async def from_the_loop(on: Engine) -> tuple[int, int]:
        thread, rows = await reads.read(on, where)
        assert rows == []
        return threading.get_ident(), thread

    loop_thread, read_thread = asyncio.run(from_the_loop(engine))
    assert read_thread == loop_thread
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    small = make_engine(database_url, pool_size=3)
    loop_thread, read_thread = asyncio.run(from_the_loop(small))
    assert (read_thread == loop_thread) is (engine.dialect.name == "sqlite")
    small.dispose()


def test_the_session_user_lookup_reads_a_live_session_only(engine):
    with Session(engine, expire_on_commit=False) as session:
        user, _ = seed(session)
        token = accounts.open_session(session, user, NOW, days=1)
    with reads.Reader(engine) as reader:
        found = accounts.user_for_token(reader, token, NOW + timedelta(hours=23))
        expired = accounts.user_for_token(reader, token, NOW + timedelta(days=2))
    assert found is not None and found.id == user.id and expired is None
    assert (found.role, found.time_accommodation) == (Role.INSTRUCTOR, TimeAccommodation.EXTENDED_2)


def test_a_failed_read_gives_its_connection_back_and_a_sessions_is_sqlalchemys_to_handle(engine):
    missing = reads.Query(select_columns(table("no_such_table", column("x")).c.x))
    with pytest.raises(Exception) as on_driver, reads.Reader(engine) as reader:
        reader.rows(missing)
    assert not isinstance(on_driver.value, DBAPIError)  # the driver's own error
    assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    with Session(engine) as session:
        with pytest.raises(DBAPIError):  # SQLAlchemy saw it: the session knows its state
            reads.Reader.within(session).first(missing)
        session.rollback()
        assert session.execute(select_columns(func.count()).select_from(User)).scalar_one() == 0


def test_a_readers_selects_open_no_transaction_and_the_connection_goes_back_as_lent(engine):
    with reads.Reader(engine) as reader:
        assert reader.rows(CREATED_BEFORE, before=NOW) == []
        driver = reader._connection.dbapi_connection
        if engine.dialect.name == "postgresql":
            # No BEGIN was sent before the SELECT, so no ROLLBACK is owed after it.
            assert driver.info.transaction_status.name == "IDLE"
    if engine.dialect.name == "postgresql":
        assert driver.autocommit is False  # sessions get it as they always did
    with Session(engine) as session:  # the same pooled connection: a transaction that rolls back
        session.add(User(role=Role.LEARNER, is_guest=True, created_at=NOW))
        session.flush()
        session.rollback()
    with reads.Reader(engine) as reader:
        assert reader.rows(CREATED_BEFORE, before=NOW + timedelta(days=1)) == []


def _add_guest(engine: Engine) -> None:
    with Session(engine) as session:
        session.add(User(role=Role.LEARNER, is_guest=True, created_at=NOW))
        session.commit()


@pytest.mark.postgres
def test_connections_that_died_are_replaced_a_long_idle_one_before_it_is_lent(
    postgres_template, request, monkeypatch
):
    from tests.support import postgres

    url = postgres.postgres_database_url(request, template=postgres_template)
    engine = make_engine(url, pool_size=1)
    try:
        _add_guest(engine)  # the pool's one connection, used and given back
        postgres.end_other_connections(url)
        # Used a moment ago, so lent unchecked: the page's SELECT finds it dead and runs
        # again on a fresh connection; the learner sees the page.
        with reads.Reader(engine) as reader:
            assert len(reader.rows(CREATED_BEFORE, before=NOW + timedelta(days=1))) == 1
        postgres.end_other_connections(url)
        with pytest.raises(DBAPIError) as failed:  # a write is not run twice: it fails, once
            _add_guest(engine)
        assert failed.value.connection_invalidated
        _add_guest(engine)  # SQLAlchemy replaced it
        postgres.end_other_connections(url)
        monkeypatch.setattr("app.db.PING_AFTER_IDLE_S", 0.0)  # as if it had been idle for long
        _add_guest(engine)  # checked before it was lent, found dead, replaced: the write works
        with reads.Reader(engine) as reader:
            assert len(reader.rows(CREATED_BEFORE, before=NOW + timedelta(days=1))) == 3
    finally:
        engine.dispose()

"""The database engine and sessions: SQLite by default, PostgreSQL in production."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
from sqlalchemy import DateTime, Enum, event, make_url
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.types import TypeDecorator
from sqlalchemy.util import greenlet_spawn
from sqlmodel import Session, create_engine

from app.write_lock import WriteLock

T = TypeVar("T")


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


# anyio runs FastAPI's sync routes and dependencies on at most 40 worker threads. Each holds one
# pooled connection while it works and gives it back before it returns (services and pages end
# their transactions), so the pool keeps as many: no request waits for a connection (SQLAlchemy's
# default of 5 + 10 made 25 threads queue at 50 connections).
WORKER_THREADS = 40

# Connection execution option: True makes this connection's transactions readers. On SQLite a
# reader begins with a plain (deferred) BEGIN, takes no lock and, in WAL mode, never waits for a
# writer; a write inside a reader is refused (ReadOnlyTransaction), on every database, because
# upgrading a read to a write is what fails with "database is locked" under concurrency.
READER = "ranklab_reader"


class ReadOnlyTransaction(RuntimeError):
    """A write was attempted inside a reader transaction: call begin_write(session) first."""


class WriteLockTimeout(RuntimeError):
    """A writer waited too long for its turn (app.write_lock): the app answers 503, try again."""


# How long a writer on a worker thread waits for this process's other writers before giving up
# (a 503). The event loop's writers queue in app.writes, bounded far more tightly.
THREAD_WRITE_WAIT_S = 10.0
# A PostgreSQL request never waits this long for a pooled connection (the pool holds one per
# worker thread); if it ever does, it fails fast with a 503, not after SQLAlchemy's 30 s.
POOL_TIMEOUT_S = 5.0
# A pooled PostgreSQL connection unused for longer is checked before it is lent again.
PING_AFTER_IDLE_S = 10.0


class _Connection(sqlite3.Connection):
    """An SQLite connection that lets the write lock go as its transaction ends, whichever way."""

    write_lock: WriteLock | None = None
    holds_write_lock = False
    writing = False  # in a writer transaction (BEGIN IMMEDIATE)
    flushes = False  # synchronous=FULL made ours: flush the WAL after a writer's commit

    def commit(self) -> None:
        try:
            super().commit()
            if self.writing and self.flushes and self.write_lock is not None:
                self.write_lock.committed()  # on disk before the request is answered
        finally:
            self.writing = False
            self._let_go()

    def rollback(self) -> None:
        try:
            super().rollback()
        finally:
            self.writing = False
            self._let_go()

    def _let_go(self) -> None:
        if self.holds_write_lock and self.write_lock is not None:
            self.holds_write_lock = False
            self.write_lock.release()


def write_lock(engine: Engine) -> WriteLock | None:
    """The engine's SQLite write lock (app.write_lock), or None (PostgreSQL orders its own)."""
    found: WriteLock | None = engine.__dict__.get("ranklab_write_lock")
    return found


def make_engine(
    url: str, pool_size: int | None = None, synchronous: str = "full", write_lanes: int = 8
) -> Engine:
    """Create an engine with a connection per worker thread; on SQLite, writers lock at BEGIN.

    `synchronous` is SQLite's (full or normal): full makes every commit wait for the disk
    (fsync), so a committed answer survives even a power cut; normal, in WAL mode, leaves the
    flushing to checkpoints: a commit survives the app's crash, not the machine's.

    Transactions are writers unless the connection carries the READER option (read_session
    sets it for a whole session): writers on SQLite begin with BEGIN IMMEDIATE, taking the
    write lock up front, so two transactions that both read and then write never deadlock into
    SQLITE_BUSY; the second simply waits its turn (up to the 30 s busy timeout).

    On PostgreSQL the pool is split between worker threads and the event loop (LoopEngines),
    and `write_lanes` is how many writes the loop may run at once.
    """
    size = pool_size or WORKER_THREADS
    if not url.startswith("sqlite"):
        return _server_engines(url, size, write_lanes)
    database = make_url(url).database
    lock = None
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)  # var/ on a fresh checkout
        lock = WriteLock.of(Path(database))
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 30, "factory": _Connection},
        pool_size=size,
        # Beyond those, a connection to a file opens at once: checking one out never waits,
        # which the event loop's reads rely on (never_waits). PostgreSQL's stay bounded.
        max_overflow=-1,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, open transactions, so that BEGIN below is ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # full: SQLite's NORMAL, plus a flush of the WAL after each commit by this app (one
        # per writer's turn, app.writes): as durable as FULL, for fewer fsyncs.
        flushes = synchronous == "full" and lock is not None
        cursor.execute(f"PRAGMA synchronous={'NORMAL' if flushes else _SYNCHRONOUS[synchronous]}")
        cursor.close()
        dbapi_connection.write_lock = lock
        dbapi_connection.flushes = flushes

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        if connection.get_execution_options().get(READER, False):
            connection.exec_driver_sql("BEGIN")
            return
        driver = connection.connection.dbapi_connection
        if lock is not None and not lock.held_here():
            # Wait for our turn here, in order, rather than in SQLite's busy handler.
            if not lock.acquire(THREAD_WRITE_WAIT_S):
                raise WriteLockTimeout("the database is busy: try again in a moment")
            driver.holds_write_lock = True
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            driver._let_go()
            raise
        driver.writing = True

    engine.__dict__["ranklab_write_lock"] = lock

    _refuse_writes_in_readers(engine)
    return engine


_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}
_LOOP_ENGINES = "ranklab_loop_engines"
_ROOT = "ranklab_root"  # a LoopEngines' engine: the one make_engine returned
# Fewer connections than this in all: everything runs on worker threads (no LoopEngines).
_SMALLEST_SPLIT = 4


@dataclass(frozen=True)
class LoopEngines:
    """The database for the event loop: PostgreSQL through psycopg's asyncio driver.

    A page's reads and the write queue's writes are network round trips. On a worker thread
    each one ends with the thread waiting for the GIL, up to the switch interval (5 ms) while
    the loop is busy: under a class's load that wait, not the database, set how many writes a
    second went through. These engines reach the same database with pools of their own, and
    code written for a sync Engine runs on them unchanged inside SQLAlchemy's `greenlet_spawn`,
    where each round trip is awaited on the loop (as SQLAlchemy's AsyncSession runs a Session).
    Nowhere else: outside `greenlet_spawn` their driver calls refuse to run (MissingGreenlet).

    `reads` keeps its connections in autocommit (each SELECT stands alone, app.reads); `writes`
    has one connection per write lane (app.writes), so a write never waits behind page reads
    for a connection.
    """

    reads: Engine
    writes: Engine


def _server_engines(url: str, size: int, write_lanes: int) -> Engine:
    """PostgreSQL: half the connections for worker threads (the engine returned), half for the
    loop (its LoopEngines: the write lanes', at most half of those, and the page reads')."""
    on_loop = size // 2 if size >= _SMALLEST_SPLIT else 0
    engine: Engine = _server_engine(create_engine, url, size - on_loop)
    if on_loop:
        lanes = max(1, min(write_lanes, on_loop // 2))
        reads = _server_engine(
            create_async_engine,
            url,
            on_loop - lanes,
            isolation_level="AUTOCOMMIT",
            pool_reset_on_return=None,  # no transaction to end: nothing to send when given back
        )
        writes = _server_engine(create_async_engine, url, lanes)
        engine.__dict__[_LOOP_ENGINES] = LoopEngines(reads.sync_engine, writes.sync_engine)
        for each in (reads, writes):
            each.sync_engine.__dict__[_ROOT] = engine
    return engine


def _server_engine(create: Callable[..., Any], url: str, size: int, **options: Any) -> Any:
    engine = create(url, pool_size=size, max_overflow=0, pool_timeout=POOL_TIMEOUT_S, **options)
    sync_engine = getattr(engine, "sync_engine", engine)
    _ping_after_idle(sync_engine)
    _refuse_writes_in_readers(sync_engine)
    return engine


def loop_engines(engine: Engine) -> LoopEngines | None:
    """The engine's LoopEngines, or None (SQLite, or a pool too small to split)."""
    found: LoopEngines | None = engine.__dict__.get(_LOOP_ENGINES)
    return found


def write_lanes(engine: Engine, wanted: int) -> int:
    """How many writes may run at once on PostgreSQL: a connection each, never more."""
    found = loop_engines(engine)
    pool = found.writes.pool if found is not None else engine.pool
    return min(wanted, pool.size())  # type: ignore[attr-defined]


def renew_connections(engine: Engine) -> None:
    """After a connection was found dead (the server restarted), have every pool of the engine
    (or of the engine whose LoopEngines it is) close and make again each connection made before
    now, when it is next lent: what SQLAlchemy does to the one pool where it found it dead."""
    engine = engine.__dict__.get(_ROOT, engine)
    found = loop_engines(engine)
    for each in (engine, *((found.reads, found.writes) if found is not None else ())):
        each.pool._invalidate(None)  # stamps the time; closes nothing


def thread_connections(engine: Engine) -> int:
    """How many connections the worker threads' pool keeps: the most threads that may hold
    one at once, so none waits (the app sizes anyio's thread limiter to it)."""
    size: int = engine.pool.size()  # type: ignore[attr-defined]
    return size


async def dispose(engine: Engine) -> None:
    """Close the engine's pooled connections, and its LoopEngines' (awaited, on the loop)."""
    engine.dispose()
    found = loop_engines(engine)
    if found is not None:
        await greenlet_spawn(found.reads.dispose)
        await greenlet_spawn(found.writes.dispose)


def _ping_after_idle(engine: Engine) -> None:
    """Check a pooled connection (a round trip) before lending it, if it sat unused for over
    PING_AFTER_IDLE_S: one that died meanwhile (the server restarted, a proxy dropped it) is
    replaced, unseen by the request.

    SQLAlchemy's pool_pre_ping checks at every checkout: a round trip per page and per write,
    which under a class's load cost the app and the database server more CPU than the page's
    own query. A connection in steady use is alive; one that dies while in use fails that one
    request, and SQLAlchemy then renews the pool (what pool_pre_ping could not prevent either).
    """

    @event.listens_for(engine, "checkin")
    def _stamp(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info["ranklab_last_used"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _check(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        last_used = record.info.get("ranklab_last_used")
        if last_used is None or time.monotonic() - last_used <= PING_AFTER_IDLE_S:
            return  # just made, or used a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as error:
            if engine.dialect.is_disconnect(error, dbapi_connection, None):
                raise DisconnectionError("a pooled connection was closed meanwhile") from error
            raise


def _refuse_writes_in_readers(engine: Engine) -> None:
    @event.listens_for(engine, "before_cursor_execute")
    def _check(
        connection: Any,
        _cursor: Any,
        statement: str,
        _parameters: Any,
        context: Any,
        _executemany: bool,
    ) -> None:
        if context is None or not (context.isinsert or context.isupdate or context.isdelete):
            return
        if connection.get_execution_options().get(READER, False):
            raise ReadOnlyTransaction(
                "a write inside a read transaction: the service must call "
                f"app.db.begin_write(session) first ({' '.join(statement.split()[:3])} ...)"
            )


def write_session(engine: Engine) -> Session:
    """Return a session whose transactions are writers (services decide when to commit)."""
    return Session(engine, expire_on_commit=False)


def read_session(engine: Engine) -> Session:
    """Return a session whose transactions read: no write lock unless begin_write asks for one."""
    return Session(engine, expire_on_commit=False, execution_options={READER: True})


def never_waits(session: Session) -> bool:
    """Whether the session's reads and its close can never wait: an SQLite reader's.

    In WAL mode a reader takes no lock, SQLite is in-process (no network) and its pool never
    makes a checkout wait, so such work may run on the event loop: a trip to a worker thread
    costs more than the query. A writer may wait up to the busy timeout for the write lock, and
    PostgreSQL is a network round trip: those run on worker threads.
    """
    reader = bool(session.execution_options.get(READER, False))
    return reader and session.get_bind().dialect.name == "sqlite"


async def run_reads(session: Session, reads: Callable[..., T], *args: Any) -> T:
    """Run a function that only reads through the session: here if that cannot wait, else on a
    worker thread. A write inside it is refused (ReadOnlyTransaction, or begin_write's check).

    Here, the transaction goes on (it holds no lock, and its connection costs nothing held); a
    worker thread ends it before returning, so no connection is held outside a worker thread
    and the pool, one connection per thread, never makes a request wait.
    """
    if never_waits(session):
        return reads(*args)
    return await anyio.to_thread.run_sync(then_end, session, reads, *args)


async def run_writes(session: Session, writes: Callable[..., T], *args: Any) -> T:
    """Run a function that may write (and wait for SQLite's write lock) on a worker thread,
    ending its transaction before the thread returns."""
    return await anyio.to_thread.run_sync(then_end, session, writes, *args)


def then_end(session: Session, work: Callable[..., T], *args: Any) -> T:
    """Run work(*args) in the session's transaction, then commit it (or roll back on error)."""
    try:
        result = work(*args)
    except BaseException:
        session.rollback()
        raise
    session.commit()
    return result


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def begin_write(session: Session) -> None:
    """Make sure the session is in a writer transaction; every service that writes starts so.

    In a writer transaction already (a POST request's, a command's) this does nothing. A reader
    transaction in progress is committed first (it holds no lock that could be upgraded without
    risking SQLITE_BUSY), so what was read before may have changed: services re-check it with
    conditional writes. Objects loaded before stay loaded (expire_on_commit is off).
    """
    lock = write_lock(session.get_bind())  # type: ignore[arg-type]
    # BEGIN IMMEDIATE may wait for the lock: never on the event loop, unless the loop holds the
    # lock already (app.writes runs SQLite's writes there, one at a time, in order).
    awaited = session.get_bind().dialect.is_async  # LoopEngines, in greenlet_spawn: no wait
    if _on_event_loop() and not (lock is not None and lock.held_here()) and not awaited:
        raise RuntimeError("a write must run on a worker thread or in app.writes' queue")
    if session.in_transaction():
        if not session.connection().get_execution_options().get(READER, False):
            return
        if session.new or session.dirty or session.deleted:
            raise ReadOnlyTransaction("begin_write must come before the first change")
        session.commit()
    session.connection(execution_options={READER: False})


def end_read(session: Session) -> None:
    """End the session's transaction now, so its connection goes back to the pool (or SQLite's
    snapshot is let go) before a slow response is sent. Routes call this, never commit: it
    refuses a session holding unsaved changes, which only a service may commit."""
    if session.new or session.dirty or session.deleted:
        raise ReadOnlyTransaction("end_read with unsaved changes: a service must commit them")
    session.commit()


def utcnow() -> datetime:
    """Return the current time, aware, in UTC."""
    return datetime.now(UTC)

"""Reads and writes on the database: pages read without SQLite's write lock, every write begins
as a writer, and the pool has a connection for every worker thread (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import UTC, datetime

import anyio
import anyio.to_thread
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import make_url
from sqlmodel import Session, select

from app.accounts.models import User
from app.attempts.models import ItemAttempt
from app.config import Settings
from app.db import (
    WORKER_THREADS,
    ReadOnlyTransaction,
    begin_write,
    end_read,
    make_engine,
    read_session,
    thread_connections,
)
from tests.support.learner import Learner

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


def test_pages_answer_while_another_connection_holds_the_write_lock(app_factory, sqlite_url):
    with TestClient(app_factory(sqlite_url)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        path = make_url(sqlite_url).database
        assert path is not None
        # A writer in another process would hold the lock like this; the app's busy timeout is
        # 30 s, so a page that took the write lock (BEGIN IMMEDIATE) would still be waiting.
        with closing(sqlite3.connect(path, isolation_level=None)) as writer:
            writer.execute("BEGIN IMMEDIATE")
            try:
                with ThreadPoolExecutor(max_workers=4) as pool:
                    pages = [
                        pool.submit(learner.get, url)
                        for url in ("/", "/sets/test-basics", f"{attempt}/q/1", "/me/progress")
                    ]
                    statuses = [page.result(timeout=10).status_code for page in pages]
            finally:
                writer.execute("COMMIT")
    assert statuses == [200, 200, 200, 200]


def test_a_write_inside_a_read_transaction_is_refused(database_url):
    engine = make_engine(database_url)
    with read_session(engine) as session:
        session.exec(select(User)).all()  # a read: the transaction is a reader's
        session.add(User(created_at=NOW))
        with pytest.raises(ReadOnlyTransaction, match="begin_write"):
            session.flush()
        session.rollback()
        begin_write(session)  # the way to write: the transaction begins as a writer
        session.add(User(created_at=NOW))
        session.commit()
        assert len(session.exec(select(User)).all()) == 1
    engine.dispose()


def test_a_route_ends_a_read_but_cannot_commit_a_change_with_it(database_url):
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        session.exec(select(User)).all()
        assert session.in_transaction()
        end_read(session)
        assert not session.in_transaction()
        session.add(User(created_at=NOW))
        with pytest.raises(ReadOnlyTransaction, match="a service must commit"):
            end_read(session)
        session.rollback()
        assert session.exec(select(User)).all() == []
    engine.dispose()


def test_begin_write_keeps_a_writer_s_transaction_and_its_reads(database_url):
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:  # a POST's, a command's: a writer
        session.add(User(created_at=NOW))
        session.flush()
        begin_write(session)  # already a writer: nothing is committed behind the caller's back
        session.rollback()
        assert session.exec(select(User)).all() == []
    engine.dispose()


def test_a_write_never_runs_on_the_event_loop(sqlite_url):
    engine = make_engine(sqlite_url)

    async def write_here() -> None:
        with read_session(engine) as session:
            begin_write(session)  # BEGIN IMMEDIATE could wait 30 s and stall every request

    with pytest.raises(RuntimeError, match="worker thread"):
        asyncio.run(write_here())
    engine.dispose()


def test_parallel_views_of_an_expired_question_record_one_time_out(learner, clock, database_url):
    attempt = learner.start("test-basics")
    clock.advance(60 + 3 + 1)  # limit 60 s, grace 3 s: each view reads, then must write

    def view(_: int) -> tuple[int, bool]:
        page = learner.get(f"{attempt}/q/1")
        return page.status_code, "Time's up" in page.text

    with ThreadPoolExecutor(max_workers=8) as pool:
        views = list(pool.map(view, range(12)))
    assert views == [(200, True)] * 12  # never "database is locked"
    engine = make_engine(database_url)
    with Session(engine) as session:
        row = session.exec(select(ItemAttempt).where(ItemAttempt.position == 0)).one()
    engine.dispose()
    assert row.status.value == "timed_out" and row.closed_at is not None


def test_the_pool_has_a_connection_for_every_worker_thread(app_factory, database_url):
    """SQLite's pool keeps one per worker thread (anyio's default, 40); PostgreSQL's half of
    them, for as many worker threads, the other half serving the event loop (app.db)."""
    worker_threads = anyio.run(_default_worker_threads)
    assert WORKER_THREADS == worker_threads == Settings().database_pool_size
    engine = make_engine(database_url)
    split = engine.dialect.name != "sqlite"
    assert thread_connections(engine) == (worker_threads // 2 if split else worker_threads)
    engine.dispose()
    smaller = make_engine(database_url, pool_size=7)  # RANKLAB_DATABASE_POOL_SIZE
    assert thread_connections(smaller) == (4 if split else 7)
    smaller.dispose()
    with TestClient(app_factory(database_url, database_pool_size=7)) as client:
        limiter = client.portal.call(_default_worker_threads)  # type: ignore[union-attr]
        assert limiter == (4 if split else 7)  # no worker thread waits for a connection


async def _default_worker_threads() -> int:
    return int(anyio.to_thread.current_default_thread_limiter().total_tokens)

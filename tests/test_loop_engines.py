"""PostgreSQL on the event loop (app.db.LoopEngines): page reads and the write queue's writes
await their round trips on the loop through psycopg's asyncio driver, each on a pool of its
own, and the loop serves other requests meanwhile; no worker thread takes part. SQLite and a
pool too small to split keep to what they did."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, text
from sqlalchemy import select as select_columns
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app import reads
from app.accounts.models import Role, User
from app.db import (
    begin_write,
    dispose,
    loop_engines,
    make_engine,
    thread_connections,
    write_lanes,
    write_session,
)
from app.writes import WriteQueue
from tests.support import postgres
from tests.support.learner import Learner

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
SLEEP = reads.Query(select_columns(func.pg_sleep(0.3)))
GUESTS = reads.Query(
    select_columns(func.count()).select_from(User).where(User.is_guest)  # type: ignore[arg-type]
)


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    made = make_engine(postgres_url, pool_size=40, write_lanes=8)
    yield made
    asyncio.run(dispose(made))


def _add_guest(session: Session) -> int:
    begin_write(session)
    session.add(User(role=Role.LEARNER, is_guest=True, created_at=NOW))
    session.commit()
    return threading.get_ident()


def test_sqlite_has_no_loop_engines_and_its_pool_serves_every_worker_thread(sqlite_url):
    engine = make_engine(sqlite_url, pool_size=40)
    assert loop_engines(engine) is None
    assert thread_connections(engine) == 40 and write_lanes(engine, 8) == 8
    engine.dispose()


@pytest.mark.postgres
def test_the_pool_is_split_between_worker_threads_page_reads_and_write_lanes(postgres_url):
    engine = make_engine(postgres_url, pool_size=40, write_lanes=8)
    found = loop_engines(engine)
    assert found is not None
    sizes = (thread_connections(engine), found.reads.pool.size(), found.writes.pool.size())  # type: ignore[attr-defined]
    assert sizes == (20, 12, 8) and sum(sizes) == 40  # processes × 40 < max_connections holds
    assert write_lanes(engine, 8) == 8
    assert write_lanes(engine, 50) == 8  # a lane never waits for a connection
    engine.dispose()
    more_lanes = make_engine(postgres_url, pool_size=40, write_lanes=50)
    found = loop_engines(more_lanes)
    assert found is not None and write_lanes(more_lanes, 50) == 10  # half the loop's, at most
    more_lanes.dispose()
    small = make_engine(postgres_url, pool_size=3)  # too few to split: all for worker threads
    assert loop_engines(small) is None and thread_connections(small) == 3
    assert write_lanes(small, 8) == 3
    small.dispose()


@pytest.mark.postgres
def test_a_page_read_awaits_its_round_trip_on_the_loop_which_serves_others_meanwhile(engine):
    found = loop_engines(engine)
    assert found is not None

    def sleeps(reader: reads.Reader) -> tuple[int, bool, object]:
        driver = reader._connection.dbapi_connection
        reader.first(SLEEP)  # 0.3 s in the server
        return threading.get_ident(), driver.autocommit, driver.info.transaction_status.name

    async def read_beside_a_ticker() -> tuple[tuple[int, bool, object], int, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        try:
            seen = await reads.read(engine, sleeps)
        finally:
            ticker.cancel()
        return seen, ticks, threading.get_ident()

    (read_thread, autocommit, status), ticks, loop_thread = asyncio.run(read_beside_a_ticker())
    assert read_thread == loop_thread  # no worker thread
    assert ticks >= 10  # the loop went on while the server slept: the read did not block it
    assert autocommit is True and status == "IDLE"  # lent in autocommit: no BEGIN, no ROLLBACK
    assert found.reads.pool.checkedout() == 0 and found.reads.pool.checkedin() == 1  # type: ignore[attr-defined]
    assert engine.pool.checkedin() == 0  # type: ignore[attr-defined]  # the threads' pool: unused


@pytest.mark.postgres
def test_a_queued_write_runs_on_the_loop_on_a_lanes_connection_and_its_session_is_given_back(
    engine,
):
    found = loop_engines(engine)
    assert found is not None
    queue = WriteQueue(engine, write_lanes(engine, 8), max_wait_s=5.0)

    async def write_twice() -> tuple[int, int, int, Engine, Engine]:
        session = write_session(engine)
        on_loop = await queue.run(session, _add_guest, session)
        after = session.get_bind()
        session.close()
        busy = write_session(engine)
        busy.execute(text("SELECT 1"))  # a transaction on the threads' engine, begun here
        on_thread = await queue.run(busy, _add_guest, busy)
        busy_bind = busy.get_bind()
        busy.close()
        return on_loop, on_thread, threading.get_ident(), after, busy_bind

    on_loop, on_thread, loop_thread, after, busy_bind = asyncio.run(write_twice())
    assert on_loop == loop_thread  # awaited on the loop, as a task of the write queue
    assert on_thread != loop_thread  # a session in a transaction already keeps its connection
    assert after is engine and busy_bind is engine  # bound back to the engine it was made with
    assert found.writes.pool.checkedout() == 0 and found.writes.pool.checkedin() == 1  # type: ignore[attr-defined]
    with Session(engine) as session:
        assert len(session.exec(select(User)).all()) == 2


@pytest.mark.postgres
def test_a_write_on_the_loop_outside_the_write_queue_is_still_refused(engine):
    async def write_on_the_loop() -> None:
        _add_guest(write_session(engine))

    with pytest.raises(RuntimeError, match=r"worker thread or in app\.writes"):
        asyncio.run(write_on_the_loop())


@pytest.mark.postgres
def test_a_dead_connection_found_by_a_read_renews_every_pool_so_the_next_write_goes_through(
    engine, postgres_url
):
    queue = WriteQueue(engine, write_lanes(engine, 8), max_wait_s=5.0)

    async def read_then_write() -> int:
        guests = await reads.read(engine, lambda reader: reader.first(GUESTS))
        session = write_session(engine)
        await queue.run(session, _add_guest, session)
        session.close()
        return int(guests[0])

    assert asyncio.run(read_then_write()) == 0  # both loop pools hold a connection in use
    postgres.end_other_connections(postgres_url)
    # The read finds its connection dead, reads again on a fresh one and renews the others':
    # the write's lane then gets a fresh connection too, not the dead one.
    assert asyncio.run(read_then_write()) == 1
    with Session(engine) as session:
        assert len(session.exec(select(User)).all()) == 2


@pytest.mark.postgres
def test_the_apps_shutdown_closes_every_connection_it_made(app_factory, postgres_url):
    with TestClient(app_factory(postgres_url)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")  # a write, in the queue, on the loop
        assert learner.get(f"{attempt}/q/1").status_code == 200  # reads, on the loop
        found = loop_engines(client.app.state.engine)  # type: ignore[attr-defined]
        assert found is not None and found.writes.pool.checkedin() == 1  # type: ignore[attr-defined]
        assert found.reads.pool.checkedin() >= 1  # type: ignore[attr-defined]
        assert postgres.other_connections(postgres_url) >= 2
    assert postgres.other_connections(postgres_url) == 0

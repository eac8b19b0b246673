"""SQLite's writes are on disk before they are acknowledged: one flush per commit, or one for a
writer's whole turn (a group commit), and none for readers or with synchronous=normal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session

from app.db import make_engine, read_session, write_lock


@pytest.fixture
def flushed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files os.fsync is called on (the real call still happens)."""
    files: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        files.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return files


def _insert(engine, value: int) -> None:
    with Session(engine) as session:
        session.execute(text("INSERT INTO t VALUES (:v)"), {"v": value})
        session.commit()


def test_each_commit_is_flushed_and_a_group_of_commits_once(tmp_path: Path, flushed):
    engine = make_engine(f"sqlite:///{tmp_path / 'app.db'}")
    wal = str(tmp_path / "app.db-wal")
    with Session(engine) as session:
        session.execute(text("CREATE TABLE t (x INTEGER)"))
        session.commit()
    _insert(engine, 1)
    assert flushed == [wal, wal]
    lock = write_lock(engine)
    assert lock is not None and lock.try_acquire()
    try:
        with lock.group():  # as app.writes' writer runs a turn of queued writes
            for value in range(3):
                _insert(engine, value)
            assert flushed == [wal, wal]  # not yet: nothing is acknowledged before the flush
    finally:
        lock.release()
    assert flushed == [wal, wal, wal]
    with read_session(engine) as session:
        assert session.execute(text("SELECT count(*) FROM t")).scalar_one() == 4
        session.commit()
    assert len(flushed) == 3  # a reader's end flushes nothing
    engine.dispose()


def test_synchronous_normal_leaves_flushing_to_sqlite(tmp_path: Path, flushed):
    engine = make_engine(f"sqlite:///{tmp_path / 'app.db'}", synchronous="normal")
    with Session(engine) as session:
        session.execute(text("CREATE TABLE t (x INTEGER)"))
        session.commit()
    _insert(engine, 1)
    assert flushed == []
    engine.dispose()

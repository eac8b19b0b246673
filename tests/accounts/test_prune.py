"""Pruning guests who never acted: only old guests no row names but their browser sessions."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.accounts import service as accounts
from app.accounts.models import User, WebSession
from app.cli import main
from app.db import make_engine
from tests.support.learner import Learner


def users(database_url: str) -> list[tuple[bool, str | None]]:
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            rows = session.exec(select(User).order_by(col(User.id))).all()
            return [(user.is_guest, user.username) for user in rows]
    finally:
        engine.dispose()


def sessions(database_url: str) -> int:
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            return len(session.exec(select(WebSession)).all())
    finally:
        engine.dispose()


def test_old_guests_who_never_acted_go_with_their_sessions_and_the_others_stay(
    app_factory, database_url, clock
):
    with TestClient(app_factory(database_url)) as client:
        idle = Learner(client)
        idle.start_as_guest()  # a guest, a session, nothing done
        client.cookies.clear()
        active = Learner(client)
        active.start_as_guest()
        active.start("test-basics")  # acted: an attempt names them
        client.cookies.clear()
        account = Learner(client)
        account.get("/")
        account.post("/register", {"username": "ada", "password": "correct horse"})
    assert sessions(database_url) == 3
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            assert accounts.prune_idle_guests(session, clock.now) == 0  # none made before now
            assert accounts.prune_idle_guests(session, clock.now + timedelta(days=1)) == 1
    finally:
        engine.dispose()
    assert users(database_url) == [(True, None), (False, "ada")]
    assert sessions(database_url) == 2


def test_the_command_prunes_guests_older_than_its_days(
    app_factory, sqlite_url, monkeypatch, capsys
):
    with TestClient(app_factory(sqlite_url)) as client:
        Learner(client).start_as_guest()  # made at the fake clock's time, long ago
    monkeypatch.setenv("DATABASE_URL", sqlite_url)
    assert main(["users", "prune-guests", "--days", "0"]) == 0
    assert "pruned 1 guests" in capsys.readouterr().out
    assert users(sqlite_url) == []

"""The per-request user lookup: one query on the driver whose row becomes a detached User."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, inspect
from sqlmodel import Session, select

from app.accounts import service as accounts
from app.accounts.models import TimeAccommodation, User
from app.db import make_engine, utcnow
from app.reads import Reader

REPO = Path(__file__).resolve().parents[2]


def test_the_looked_up_user_is_detached_and_a_service_can_change_it(database_url: str) -> None:
    engine = make_engine(database_url)
    now = utcnow()
    with Session(engine, expire_on_commit=False) as session:
        guest = accounts.create_guest(session, now)
        token = accounts.open_session(session, guest, now, days=1)
    with Reader(engine) as reader:
        user = accounts.user_for_token(reader, token, now)
    assert user is not None and user.id == guest.id
    assert inspect(user).detached  # readable with no session, as pages render it
    assert (user.display_name, user.is_guest, user.created_at) == ("Guest", True, guest.created_at)
    assert user.time_accommodation is TimeAccommodation.STANDARD

    user.time_accommodation = TimeAccommodation.EXTENDED_2  # as an admin's change would
    with Session(engine) as session:
        session.add(user)  # an UPDATE of its row, not a second user
        session.commit()
        count = session.exec(select(func.count()).select_from(User)).one()
        stored = session.get(User, guest.id)
        assert count == 1
        assert stored is not None and stored.time_accommodation is TimeAccommodation.EXTENDED_2
    with Reader(engine) as reader:
        assert accounts.user_for_token(reader, token, now + timedelta(days=2)) is None  # expired
        assert accounts.user_for_token(reader, token + "x", now) is None
    engine.dispose()


def test_the_lookup_works_as_a_fresh_process_first_use_of_the_models(sqlite_url: str) -> None:
    """A server's first request looks the user up before any ORM query has configured the
    mappers: the lookup must not depend on that having happened."""
    script = textwrap.dedent(
        f"""
        import sqlite3
        from app.accounts import service as accounts
        from app.db import make_engine, utcnow
        from app.reads import Reader

        now = utcnow()
        token = "a-token"
        database = sqlite3.connect({sqlite_url.removeprefix("sqlite:///")!r})
        database.execute(
            "INSERT INTO user_account (id, username, role, is_guest, time_accommodation, "
            "created_at) VALUES (7, 'ada', 'learner', 0, 'standard', '2026-01-01 00:00:00')"
        )
        database.execute(
            "INSERT INTO web_session (token_hash, user_id, created_at, expires_at) "
            "VALUES (?, 7, '2026-01-01 00:00:00', '2999-01-01 00:00:00')",
            (accounts._token_hash(token),),
        )
        database.commit()
        with Reader(make_engine({sqlite_url!r})) as reader:
            user = accounts.user_for_token(reader, token, now)
        print(user.id, user.display_name, user.role.value)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["7", "ada", "learner"]

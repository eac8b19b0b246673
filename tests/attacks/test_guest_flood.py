"""attack: one client makes guest after guest (~141 a second, each a row for ever): by "Start
as guest", by starting a set, by answering in a mode, each from a fresh cookie jar.
expect: past RANKLAB_GUEST_LIMIT_PER_ADDRESS from one address, 429 and no new guest, by every
way a guest is made. A real uvicorn server on loopback."""

from __future__ import annotations

import httpx
from sqlmodel import Session, col, func, select

from app.accounts.models import User
from app.db import make_engine
from tests.support.learner import Learner
from tests.support.live import serving


def guests(database_url: str) -> int:
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            return session.exec(select(func.count()).where(col(User.is_guest))).one()
    finally:
        engine.dispose()


def fresh(url: str) -> Learner:
    """A new browser: no cookies, its CSRF token from the home page."""
    learner = Learner(httpx.Client(base_url=url))  # type: ignore[arg-type]
    learner.get("/")
    return learner


def test_guests_past_the_limit_of_an_address_are_refused_however_made(app_factory, sqlite_url):
    app = app_factory(sqlite_url, guest_limit_per_address="3/minute")
    with serving(app) as url:
        for _ in range(3):
            visitor = fresh(url)
            assert visitor.post("/guest", {"next": "/"}).status_code == 303
            visitor.client.close()
        ways = {
            "/guest": {"next": "/"},
            "/sets/test-basics/start": {},
            "/topics/collectives/practice/test-basics/world-size/answer": {"choice": "B"},
        }
        for path, form in ways.items():
            visitor = fresh(url)
            refused = visitor.post(path, form)
            assert refused.status_code == 429, (path, refused.text[:300])
            assert "Too many attempts" in refused.text
            visitor.client.close()
    assert guests(sqlite_url) == 3

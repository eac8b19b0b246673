"""Start from a visitor who is not signed in: the guest, its session and its attempt are made in
one transaction (accounts.write_guest, then the attempt), so a class's burst of Starts costs one
write each, and a Start that fails leaves no guest behind."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import User, WebSession
from app.attempts import service as attempts
from app.attempts.models import ItemAttempt, SetAttempt
from app.db import make_engine
from tests.support.learner import Learner


def _rows(database_url: str) -> tuple[list[User], list[WebSession], list[SetAttempt], int]:
    engine = make_engine(database_url)
    with Session(engine) as session:
        found = (
            list(session.exec(select(User))),
            list(session.exec(select(WebSession))),
            list(session.exec(select(SetAttempt))),
            len(session.exec(select(ItemAttempt)).all()),
        )
    engine.dispose()
    return found


def test_start_makes_a_guest_like_start_as_guest_does_and_signs_them_in(app_factory, database_url):
    with TestClient(app_factory(database_url)) as client:
        visitor = Learner(client)
        visitor.get("/sets/test-basics")
        client.cookies.set(
            "ranklab_session", "a-token-from-before-that-names-no-session", "testserver.local"
        )
        started = visitor.post("/sets/test-basics/start", follow_redirects=False)
        assert started.status_code == 303
        token = client.cookies.get("ranklab_session")
        assert token and token != "a-token-from-before-that-names-no-session"
        question = visitor.get(started.headers["location"])
        assert question.status_code == 200 and 'data-testid="who">Guest' in question.text
        assert visitor.start("test-basics") == started.headers["location"]  # resumed, not new
        other = Learner(client)
        client.cookies.clear()
        other.start_as_guest()  # the other way in (POST /guest): the same kind of user
    users, sessions, started_attempts, questions = _rows(database_url)
    assert [(u.role, u.is_guest, u.username, u.time_accommodation) for u in users] == [
        (users[1].role, True, None, users[1].time_accommodation)
    ] * 2
    assert [s.user_id for s in sessions] == [u.id for u in users]
    assert sessions[0].expires_at > sessions[0].created_at == users[0].created_at
    (attempt,) = started_attempts
    assert (attempt.user_id, attempt.set_id, attempt.current_position) == (
        users[0].id,
        "test-basics",
        0,
    )
    assert attempt.finished_at is None and questions == len(attempt.item_id_list)


def test_a_start_that_fails_leaves_no_guest_behind(app_factory, database_url, monkeypatch):
    def broken(*args: object, **kwargs: object) -> SetAttempt:
        raise RuntimeError("the attempt could not be written")

    monkeypatch.setattr(attempts, "_start", broken)
    with TestClient(app_factory(database_url), raise_server_exceptions=False) as client:
        visitor = Learner(client)
        visitor.get("/sets/test-basics")
        response = visitor.post("/sets/test-basics/start", follow_redirects=False)
        assert response.status_code == 500
        assert "ranklab_session" not in client.cookies
    assert _rows(database_url) == ([], [], [], 0)  # not a guest without the attempt it was for

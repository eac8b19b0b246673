"""Guests, accounts (argon2), sessions and their cookies."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import User
from app.db import make_engine
from tests.support.learner import Learner


@pytest.fixture
def visitor(app_factory, database_url):
    with TestClient(app_factory(database_url)) as client:
        yield Learner(client)


def test_starting_as_a_guest_sets_an_httponly_samesite_session_cookie(visitor):
    visitor.get("/")
    response = visitor.post("/guest", {"next": "/"}, follow_redirects=False)
    cookie = response.headers["set-cookie"]
    assert "ranklab_session=" in cookie
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert 'data-testid="who">Guest' in visitor.get("/").text


def test_the_csrf_cookie_is_httponly_too(client):
    cookie = client.get("/").headers["set-cookie"]
    assert "ranklab_csrf=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie


def test_a_guest_who_signs_up_keeps_their_progress(visitor, database_url):
    visitor.start_as_guest()
    attempt = visitor.start("test-basics")
    visitor.answer(attempt, 1, "B")
    response = visitor.post("/register", {"username": "ada", "password": "correct horse"})
    assert response.status_code == 200
    assert "Test basics" in response.text  # the history moved with the account
    engine = make_engine(database_url)
    with Session(engine) as session:
        users = session.exec(select(User)).all()
    engine.dispose()
    assert [(user.username, user.is_guest) for user in users] == [("ada", False)]
    assert users[0].password_hash and users[0].password_hash.startswith("$argon2id$")


def test_log_out_and_back_in_finds_the_same_attempt(visitor):
    visitor.get("/")
    visitor.post("/register", {"username": "grace", "password": "hopper-1906"})
    attempt = visitor.start("test-basics")
    visitor.post("/logout")
    assert 'data-testid="who"' not in visitor.get("/").text
    visitor.post("/login", {"username": "grace", "password": "hopper-1906", "next": "/"})
    assert visitor.start("test-basics") == attempt


def test_a_wrong_password_is_refused_without_saying_which_part_was_wrong(visitor):
    visitor.get("/")
    visitor.post("/register", {"username": "linus", "password": "penguins!"})
    visitor.post("/logout")
    response = visitor.post("/login", {"username": "linus", "password": "nope-nope"})
    assert response.status_code == 400
    assert "Wrong username or password." in response.text
    unknown = visitor.post("/login", {"username": "nobody", "password": "nope-nope"})
    assert "Wrong username or password." in unknown.text


def test_sign_up_problems_are_shown_on_the_form(visitor):
    visitor.get("/")
    short = visitor.post("/register", {"username": "bob", "password": "short"})
    assert short.status_code == 400 and "at least 8 characters" in short.text
    visitor.post("/register", {"username": "taken", "password": "long enough"})
    visitor.post("/logout")
    again = visitor.post("/register", {"username": "taken", "password": "long enough"})
    assert again.status_code == 409 and "taken" in again.text


def test_log_in_redirects_only_to_paths_on_this_site(visitor):
    visitor.get("/")
    visitor.post("/register", {"username": "eve", "password": "redirects"})
    visitor.post("/logout")
    response = visitor.post(
        "/login",
        {"username": "eve", "password": "redirects", "next": "//evil.example/"},
        follow_redirects=False,
    )
    assert response.headers["location"] == "/"


def test_new_accounts_are_learners(visitor, database_url):
    visitor.get("/")
    visitor.post("/register", {"username": "newbie", "password": "learning"})
    engine = make_engine(database_url)
    with Session(engine) as session:
        assert session.exec(select(User)).one().role == "learner"
    engine.dispose()

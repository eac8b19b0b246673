"""Admins manage roles, never their own, and the site never loses its last admin, even when
two admins demote each other at the same moment (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import Role, User
from app.db import make_engine
from tests.support.accounts import set_role, sign_up, user_id
from tests.support.learner import Learner


@pytest.fixture
def admins(app_factory, database_url):
    """Two admins, each signed in in their own browser."""
    app = app_factory(database_url)
    with TestClient(app) as first_client, TestClient(app) as second_client:
        ada, bob = Learner(first_client), Learner(second_client)
        sign_up(ada, "ada", database_url, Role.ADMIN)
        sign_up(bob, "bob", database_url, Role.ADMIN)
        yield ada, bob


def roles(database_url: str) -> dict[str, Role]:
    engine = make_engine(database_url)
    with Session(engine) as session:
        found = {user.username or "": user.role for user in session.exec(select(User))}
    engine.dispose()
    return found


def test_an_admin_cannot_change_their_own_role(admins, database_url):
    ada, _ = admins
    me = user_id(database_url, "ada")
    response = ada.post(f"/admin/users/{me}", {"role": "learner"}, follow_redirects=False)
    assert response.status_code == 403
    assert "cannot change your own role" in response.text
    assert roles(database_url)["ada"] is Role.ADMIN


def test_an_admin_may_still_set_their_own_time_accommodation(admins, database_url):
    ada, _ = admins
    me = user_id(database_url, "ada")
    form = {"role": "admin", "accommodation": "x2"}  # the row's form sends the unchanged role
    assert ada.post(f"/admin/users/{me}", form, follow_redirects=False).status_code == 303


def test_the_users_page_does_not_offer_an_admin_their_own_role(admins):
    ada, _ = admins
    page = ada.get("/admin/users").text
    own_row = page.split('data-username="ada"')[1].split("</tr>")[0]
    other_row = page.split('data-username="bob"')[1].split("</tr>")[0]
    assert 'name="role"' in own_row and "disabled" in own_row.split('name="role"')[1][:200]
    assert "disabled" not in other_row.split('name="role"')[1].split(">")[0]


def test_two_admins_demoting_each_other_at_once_leave_one_admin(admins, database_url):
    ada, bob = admins
    ids = {"ada": user_id(database_url, "ada"), "bob": user_id(database_url, "bob")}
    barrier = threading.Barrier(2)  # both requests leave together, every round

    def demote(pair: tuple[Learner, str]) -> int:
        admin, target = pair
        barrier.wait()
        form = {"role": "learner"}
        return admin.post(f"/admin/users/{ids[target]}", form, follow_redirects=False).status_code

    for _ in range(40):  # the window is a few milliseconds: 40 rounds hit it reliably
        with ThreadPoolExecutor(max_workers=2) as pool:
            statuses = sorted(pool.map(demote, [(ada, "bob"), (bob, "ada")]))
        left = [name for name, role in roles(database_url).items() if role is Role.ADMIN]
        assert len(left) == 1, statuses
        assert statuses == [303, 403]  # the loser was no longer an admin when it wrote
        for name in ids:
            set_role(database_url, name, Role.ADMIN)

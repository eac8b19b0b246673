"""Timing accommodations granted by an admin are honoured by the server's clock."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.support.accounts import sign_up, user_id
from tests.support.learner import Learner


@pytest.fixture
def people(app_factory, database_url):
    app = app_factory(database_url)
    with TestClient(app) as admin_client, TestClient(app) as learner_client:
        admin, learner = Learner(admin_client), Learner(learner_client)
        sign_up(admin, "boss", database_url, Role.ADMIN)
        sign_up(learner, "dana", database_url)
        yield admin, learner, user_id(database_url, "dana")


def grant(admin: Learner, target: int, accommodation: str) -> None:
    response = admin.post(
        f"/admin/users/{target}", {"accommodation": accommodation}, follow_redirects=False
    )
    assert response.status_code == 303


def test_double_time_doubles_the_deadline(people, clock):
    admin, learner, dana = people
    grant(admin, dana, "x2")
    attempt = learner.start("test-basics")
    assert learner.get(f"/api{attempt}/q/1").json()["seconds_left"] == 120  # 60 s × 2
    clock.advance(100)  # past the standard limit and grace, inside the extended one
    assert learner.answer(attempt, 1, "B").status_code == 303


def test_one_and_a_half_time_still_refuses_answers_after_its_deadline(people, clock):
    admin, learner, dana = people
    grant(admin, dana, "x1.5")
    attempt = learner.start("test-basics")
    clock.advance(90 + 3 + 1)
    assert learner.answer(attempt, 1, "B").status_code == 409


def test_untimed_mode_has_no_deadline(people, clock):
    admin, learner, dana = people
    grant(admin, dana, "untimed")
    attempt = learner.start("test-basics")
    state = learner.get(f"/api{attempt}/q/1").json()
    assert state["deadline_ms"] is None and state["seconds_left"] is None
    assert "untimed" in learner.get(f"{attempt}/q/1").text
    clock.advance(6 * 3600)
    assert learner.answer(attempt, 1, "B").status_code == 303


def test_standard_learners_are_unaffected(people, clock):
    _admin, learner, _dana = people
    attempt = learner.start("test-basics")
    assert learner.get(f"/api{attempt}/q/1").json()["seconds_left"] == 60

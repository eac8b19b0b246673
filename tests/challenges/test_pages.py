"""The home, topic and set pages: what learners and staff see."""

from __future__ import annotations

import shutil
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import Role, TimeAccommodation, User
from app.db import make_engine
from tests.conftest import TEST_CHALLENGES
from tests.support.accounts import set_role
from tests.support.learner import Learner


def with_broken_file(tmp_path: Path) -> Path:
    folder = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, folder)
    (folder / "broken.yaml").write_text("id: broken\ntitle: [\n")
    return folder


def test_the_topic_page_lists_each_set_with_its_facts(client):
    page = client.get("/topics/collectives").text
    assert "Test basics" in page and "Collectives" in page
    assert "2 questions" in page and "3:00 in all" in page
    assert "1 beginner" in page and "1 intermediate" in page
    assert "Test Badge" in page and "Not started" in page


def test_a_broken_file_is_shown_to_staff_and_not_to_learners(app_factory, sqlite_url, tmp_path):
    app = app_factory(sqlite_url, challenges_dir=with_broken_file(tmp_path))
    with TestClient(app) as client:
        visitor = Learner(client)
        visitor.get("/")
        visitor.post("/register", {"username": "teacher", "password": "instructs"})
        home = visitor.get("/").text
        assert 'data-topic-id="collectives"' in home  # the valid set's topic is still served
        assert "content-errors" not in home and "broken.yaml" not in home
        set_role(sqlite_url, "teacher", Role.INSTRUCTOR)
        staff_home = visitor.get("/").text
        assert 'data-testid="content-errors"' in staff_home
        assert "challenges/broken.yaml:3:1:" in staff_home


def test_the_topic_page_shows_my_status_per_set(client):
    learner = Learner(client)
    learner.start_as_guest()
    assert 'data-testid="status">Not started' in learner.get("/topics/collectives").text
    learner.start("test-basics")  # the card rendered a moment ago must not be served again
    assert 'data-testid="status">In progress' in learner.get("/topics/collectives").text
    assert ">Resume<" in learner.get("/sets/test-basics").text


def test_each_learner_sees_their_own_standing_though_the_cards_are_cached(app_factory, sqlite_url):
    app = app_factory(sqlite_url)  # one app, one fragment cache, two browsers
    newcomer, finisher = Learner(TestClient(app)), Learner(TestClient(app))
    newcomer.start_as_guest()
    finisher.start_as_guest()
    topic = "/topics/collectives"
    for learner in (newcomer, finisher):  # the same card for both, rendered once
        assert 'data-testid="status">Not started' in learner.get(topic).text
    attempt = finisher.start("test-basics")
    assert 'data-testid="status">In progress' in finisher.get(topic).text
    finisher.answer(attempt, 1, "B")
    finisher.next(attempt)
    finisher.answer(attempt, 2, "3.33")
    finisher.next(attempt)
    for _ in range(2):  # again: from the cache now
        assert 'data-testid="status">Badge earned' in finisher.get(topic).text
        assert 'data-testid="status">Not started' in newcomer.get(topic).text


def test_set_totals_include_the_learners_time_accommodation(app_factory, sqlite_url):
    with TestClient(app_factory(sqlite_url)) as client:
        learner = Learner(client)
        learner.get("/")
        learner.post("/register", {"username": "slowreader", "password": "reads-slowly"})
        assert "3:00 in all" in learner.get("/sets/test-basics").text
        assert "3:00 in all" in learner.get("/topics/collectives").text
        engine = make_engine(sqlite_url)
        with Session(engine) as session:
            user = session.exec(select(User).where(User.username == "slowreader")).one()
            user.time_accommodation = TimeAccommodation("x2")
            session.add(user)
            session.commit()
        engine.dispose()
        page = learner.get("/sets/test-basics").text
        assert "6:00 in all with your time × 2" in page
        assert "6:00 in all" in learner.get("/topics/collectives").text

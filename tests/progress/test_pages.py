"""The course path on the home page ("Start here", "Continue", each topic's state) and the
progress page (every mode of every topic, what is due, the activity calendar), over HTTP."""

from __future__ import annotations

import random
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.db import make_engine
from app.labs import service as labs
from app.modes import service as modes
from tests.conftest import FIXTURES
from tests.support.learner import Learner


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """The drill topic (a lesson, a set, cards, practice, explain-it; first on the path) and
    the hello lab (its topic, Collectives, has no topic file: no lesson)."""
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "modes", target / "drill")
    # The lesson tests' small lesson, given to drill: a topic's path starts with its lesson.
    lesson = (FIXTURES / "lessons" / "topic.yaml").read_text()
    with (target / "drill" / "topic.yaml").open("a") as topic:
        topic.write(lesson[lesson.index("\nlesson:") :])
    shutil.copy(FIXTURES / "lessons" / "sum.py", target / "drill")
    shutil.copytree(FIXTURES / "labs" / "hello", target / "hello-lab")
    return target


@pytest.fixture
def site(app_factory, database_url, content):
    with TestClient(app_factory(database_url, challenges_dir=content)) as client:
        yield client


def href(page: str, testid: str) -> str:
    found = re.search(rf'<a href="([^"]+)"[^>]*data-testid="{testid}"', page)
    assert found is not None, f"no {testid} link"
    return found[1]


def latest_user(database_url: str) -> int:
    engine = make_engine(database_url)
    with Session(engine) as session:
        user = session.exec(select(User).order_by(col(User.id).desc())).first()
        assert user is not None and user.id is not None
        user_id = user.id
    engine.dispose()
    return user_id


def test_a_first_visit_is_offered_start_here_to_the_first_topics_lesson(site):
    visitor = Learner(site)
    home = visitor.get("/").text
    assert href(home, "start-here") == "/topics/drill/lesson"
    assert 'name="next" value="/topics/drill/lesson"' in home  # Start as guest goes there too
    assert 'data-testid="continue"' not in home
    states = re.findall(r'data-topic-id="([^"]+)" data-state="([^"]+)"', home)
    assert states == [("drill", "not started"), ("collectives", "not started")]


def test_start_as_guest_signs_in_and_goes_to_the_first_step(site):
    visitor = Learner(site)
    home = visitor.get("/").text
    target = re.search(r'name="next" value="([^"]+)"', home)
    assert target is not None
    response = visitor.post("/guest", {"next": target[1]}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/topics/drill/lesson"
    again = visitor.get("/").text
    assert 'data-testid="who"' in again and 'data-testid="start-guest"' not in again


def test_continue_resumes_the_open_attempt_else_the_first_step_not_done(site):
    learner = Learner(site)
    learner.start_as_guest()
    practice = "/topics/drill/practice/modes-drill/world-size"
    learner.post(f"{practice}/answer", {"choice": ["B"]}, follow_redirects=False)
    home = learner.get("/").text
    assert href(home, "continue") == "/topics/drill/lesson"  # practised, but the lesson is first
    assert re.search(r'data-topic-id="drill" data-state="in progress"', home)
    attempt = learner.start("modes-drill")
    assert href(learner.get("/").text, "continue") == attempt


def test_a_lesson_prediction_is_work_in_the_topic(site, clock):
    """Predicting an example begins the lesson: the topic is in progress, home says Continue
    (not Start here) and the calendar counts the prediction."""
    learner = Learner(site)
    learner.start_as_guest()
    predict = "/topics/drill/lesson/examples/typed-sum/predict"
    learner.post(predict, {"output": "rank 1: 3.0\n"}, follow_redirects=False)
    home = learner.get("/").text
    assert re.search(r'data-topic-id="drill" data-state="in progress"', home)
    assert href(home, "continue") == "/topics/drill/lesson"
    page = learner.get("/me/progress").text
    assert re.search(rf'data-day="{clock.now.date().isoformat()}" data-count="1"', page)


def test_the_progress_page_shows_every_mode_of_every_topic(site, database_url, clock, content):
    learner = Learner(site)
    learner.start_as_guest()
    user_id = latest_user(database_url)
    catalog = Catalog.load(content)
    topic = catalog.topic("drill")
    lab = catalog.lab("hello-ranks")
    assert topic is not None and lab is not None
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        quiz = modes.start_quiz(session, user_id, topic, clock.now, random.Random(1))
        state = modes.quiz_for_user(session, quiz.id or 0, user_id)
        missed = next(i for i, pair in enumerate(state.questions) if pair[0] != "drill")
        for position, (deck, item) in enumerate(state.questions):
            entry = catalog.entry(deck, item)
            assert entry is not None
            right = entry.is_card or position != missed  # one question missed: to review
            modes.answer_quiz(session, state, position, entry, "x", right, clock.now)
        for step in lab.lab.steps:
            run = labs.start_run(session, user_id, lab.lab.id, step.id, 2, "code", clock.now)
            labs.finish_run(session, run, labs.Finished("ok", None, [], True), step, clock.now)
            for question in step.questions:
                labs.answer_question(session, user_id, "collectives", lab.lab.id, step, question.id,
                                     "4", True, clock.now)  # fmt: skip
    engine.dispose()
    # Flashcards through their route: Easy takes a new card past its learning steps (learned),
    # Good leaves one learning (studied, not learned yet).
    for card, grade in (("what-is-rank", 4), ("what-is-world-size", 3)):
        deck = learner.get("/topics/drill/flashcards").text  # the page that shows the card
        shown = re.search(rf'data-card-id="{card}".*?name="shown" value="([0-9a-f]+)"', deck, re.S)
        assert shown is not None, deck
        learner.post(f"/topics/drill/flashcards/{card}/grade", {"grade": grade, "shown": shown[1]})
    learner.post(
        "/topics/drill/explain/explain-averaging/answer",
        {"choice": ["Each rank computes gradients on its own batch."]},
    )

    page = learner.get("/me/progress").text
    drill = row(page, "drill")
    assert cell(drill, "cards") == "1/3 (2 studied)"
    total = len(state.questions)
    assert cell(drill, "quiz") == f"{total - 1}/{total}"
    assert re.fullmatch(r"\d/3", cell(drill, "explain"))
    assert cell(drill, "lesson") == "not yet"
    assert cell(drill, "badge") == "0/1"
    collectives = row(page, "collectives")
    steps = len(lab.lab.steps)
    assert cell(collectives, "labs") == f"{steps}/{steps} steps"  # lab steps, not labs
    assert cell(collectives, "lesson") == "—"  # no topic file, no lesson
    # The quiz's miss and the explanation that missed concepts are both due for review.
    assert re.search(r'data-testid="mistakes-due">.*?2 mistakes to review', page, re.S)
    assert re.search(r'data-testid="cards-due">.*?0 flashcards due', page, re.S)
    assert re.search(r'data-testid="overall-completion">\d+% of the course done', page)
    today = clock.now.date().isoformat()
    assert re.search(rf'data-day="{today}" data-count="([1-9]\d*)"', page)


def row(page: str, topic_id: str) -> str:
    found = re.search(rf'<tr data-testid="topic-row" data-topic-id="{topic_id}">(.*?)</tr>', page,
                      re.S)  # fmt: skip
    assert found is not None, topic_id
    return found[1]


def cell(row_html: str, testid: str) -> str:
    found = re.search(rf'<td data-testid="{testid}"[^>]*>(.*?)</td>', row_html, re.S)
    assert found is not None, testid
    text = re.sub(r"<[^>]+>", "", found[1])
    return " ".join(text.split())


def test_results_and_a_finished_lab_suggest_the_next_step(app_factory, sqlite_url, content, clock):
    # The hello lab moved into the drill topic: its steps are then lab, then the timed set.
    lab_file = content / "hello-lab" / "lab.yaml"
    lab_file.write_text(lab_file.read_text().replace("topic: Collectives", "topic: drill"))
    with TestClient(app_factory(sqlite_url, challenges_dir=content)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("modes-drill")
        for number in (1, 2):  # both left to time out: no badge
            learner.get(f"{attempt}/q/{number}")
            clock.advance(200)
            learner.post(f"{attempt}/q/{number}/expire", follow_redirects=False)
            learner.next(attempt)
        results = learner.get(f"{attempt}/results").text
        assert 'data-testid="no-badge"' in results
        # The path's one next step, as home shows it: drill's lesson is not done yet.
        assert href_in(results, "next-suggestion") == "/topics/drill/lesson"
        assert href(learner.get("/").text, "continue") == "/topics/drill/lesson"

        catalog = Catalog.load(content)
        lab = catalog.lab("hello-ranks")
        assert lab is not None
        assert 'data-testid="next-suggestion"' not in learner.get("/labs/hello-ranks").text
        user_id = latest_user(sqlite_url)
        engine = make_engine(sqlite_url)
        with Session(engine, expire_on_commit=False) as session:
            for step in lab.lab.steps:
                run = labs.start_run(session, user_id, lab.lab.id, step.id, 2, "code", clock.now)
                labs.finish_run(session, run, labs.Finished("ok", None, [], True), step, clock.now)
                for question in step.questions:
                    labs.answer_question(
                        session,
                        user_id,
                        "drill",
                        lab.lab.id,
                        step,
                        question.id,
                        "4",
                        True,
                        clock.now,
                    )
        engine.dispose()
        finished = learner.get("/labs/hello-ranks").text
        assert 'data-testid="lab-done"' in finished
        assert href_in(finished, "next-suggestion") == "/topics/drill/lesson"


def href_in(page: str, testid: str) -> str:
    found = re.search(rf'data-testid="{testid}"[^>]*>.*?<a href="([^"]+)"', page, re.S)
    assert found is not None, f"no {testid}"
    return found[1]


def test_the_calendar_counts_days_in_the_learners_time_zone(site, database_url, clock, content):
    """Near midnight UTC, the same two runs fall on different days in Tokyo (UTC+9), New York
    (UTC-4 in March, after its switch to summer time) and UTC, which a missing or unknown zone
    counts in."""
    clock.now = datetime(2026, 3, 10, 23, 45, tzinfo=UTC)
    learner = Learner(site)
    learner.start_as_guest()
    user_id = latest_user(database_url)
    lab = Catalog.load(content).lab("hello-ranks")
    assert lab is not None
    step = lab.lab.steps[0]
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        for moment in (datetime(2026, 3, 10, 3, 30, tzinfo=UTC), clock.now - timedelta(minutes=15)):
            run = labs.start_run(session, user_id, lab.lab.id, step.id, 2, "code", moment)
            labs.finish_run(session, run, labs.Finished("ok", None, [], True), step, moment)
    engine.dispose()

    def calendar(zone: str | None) -> tuple[dict[str, int], str | None]:
        """The days with activity and their counts, and the zone the page says it counts in."""
        site.cookies.delete("tz")
        if zone is not None:
            site.cookies.set("tz", zone)
        page = learner.get("/me/progress").text
        counts = re.findall(r'data-day="([\d-]+)" data-count="(\d+)"', page)
        shown = re.search(r'data-testid="calendar-zone">([^<]*)<', page)
        return {day: int(count) for day, count in counts if count != "0"}, shown and shown[1]

    assert calendar("Asia/Tokyo") == ({"2026-03-10": 1, "2026-03-11": 1}, "Asia/Tokyo")
    assert calendar("America/New_York") == ({"2026-03-09": 1, "2026-03-10": 1}, "America/New_York")
    for unknown in (None, "Mars/Olympus_Mons", "../../etc/passwd", "America", "<b>"):
        assert calendar(unknown) == ({"2026-03-10": 2}, "UTC"), unknown
    # The last day shown is the learner's today: 11 March in Tokyo, not yet in UTC.
    site.cookies.set("tz", "Asia/Tokyo")
    assert 'data-day="2026-03-11"' in learner.get("/me/progress").text
    site.cookies.delete("tz")
    assert 'data-day="2026-03-11"' not in learner.get("/me/progress").text

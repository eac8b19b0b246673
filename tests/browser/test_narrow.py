"""At a phone's width (390 px) no learner page scrolls sideways and the navigation stays on one
line: a learner finishes a set on a phone and sees their results and progress."""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect
from sqlmodel import Session, select

from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.classes import rules as class_rules
from app.classes import service as classes
from app.db import make_engine
from app.modes import service as modes
from app.review import service as review
from app.review.scheduling import Grade
from tests.browser.test_path import pass_lab, register

pytestmark = pytest.mark.browser
WIDTH = 390


def overflow(page) -> int:
    """How many pixels the page is wider than the viewport (0: no horizontal scrolling). This
    context emulates no phone, so `innerWidth` stays the window's 390 px; the crawl in
    test_phone_crawl.py measures against the screen's width under mobile emulation."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


@pytest.fixture
def phone(browser, live_server, csp_problems):
    context = browser.new_context(base_url=live_server, viewport={"width": WIDTH, "height": 844})
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def test_learner_pages_fit_a_390_px_screen(phone, tmp_path):
    visited = {}
    phone.goto("/")
    visited["home"] = overflow(phone)
    phone.goto("/sets/ddp-mastery")
    visited["set"] = overflow(phone)
    phone.get_by_test_id("start-guest").click()
    phone.wait_for_url(re.compile(r"/q/1$"))
    visited["question"] = overflow(phone)
    nav = phone.locator("header nav")
    visited["nav wraps (px over one line)"] = max(0, int(nav.bounding_box()["height"]) - 80)
    # Answer every question (whatever the choice) to reach the results.
    for _ in range(20):
        if "/results" in phone.url:
            break
        options = phone.locator('[data-testid="option"] input')
        if phone.get_by_test_id("submit").count():
            if options.count():
                options.first.check()
            else:
                phone.get_by_test_id("numeric-input").fill("1")
            phone.get_by_test_id("submit").click()
            if phone.get_by_test_id("submit").count():  # a second try left: use it
                visited.setdefault("question, answered", overflow(phone))
                continue
        visited.setdefault("question, closed with explanation", overflow(phone))
        phone.get_by_test_id("next").first.click()
    phone.wait_for_url(re.compile(r"/results$"))
    visited["results"] = overflow(phone)
    phone.goto("/me/progress")
    visited["progress"] = overflow(phone)
    phone.screenshot(path=str(tmp_path / "progress-390.png"), full_page=True)
    assert {name: px for name, px in visited.items() if px > 0} == {}


def test_every_learning_mode_fits_a_390_px_screen(phone, tmp_path):
    visited = {}

    def visit(name: str, path: str | None = None) -> None:
        if path is not None:
            phone.goto(path)
        visited[name] = overflow(phone)
        shot = re.sub(r"\W+", "-", name)
        phone.screenshot(path=str(tmp_path / f"{shot}-390.png"), full_page=True)

    visit("topic", "/topics/ddp")
    visit("practice", "/topics/ddp/practice")
    phone.locator('[data-testid="option"] input').first.check()
    phone.get_by_test_id("submit").click()
    visit("practice, answered")
    visit("flashcards", "/topics/ddp/flashcards")
    phone.keyboard.press("Space")
    visit("flashcards, flipped")
    phone.keyboard.press("1")
    phone.wait_for_url(re.compile(r"graded="))
    visit("flashcards, graded")
    visit("review", "/review")
    visit("quiz", "/topics/ddp/quiz")
    phone.get_by_test_id("start-quiz").click()
    phone.wait_for_url(re.compile(r"/quizzes/\d+$"))
    visit("quiz, question")
    visit("explain", "/topics/ddp/explain")
    phone.locator('[data-testid="explain-list"] a').first.click()
    phone.get_by_test_id("explain-answer").fill(
        "Each GPU runs its own process with a full copy of the model. The data is split. "
        "Gradients are averaged, so the models stay in sync."
    )
    phone.get_by_test_id("submit").click()
    phone.get_by_test_id("concept-score").wait_for()
    visit("explain, scored")
    visit("cheat sheet", "/topics/ddp/cheatsheet")
    nav = phone.locator("header nav")
    visited["nav wraps (px over one line)"] = max(0, int(nav.bounding_box()["height"]) - 80)
    assert {name: px for name, px in visited.items() if px > 0} == {}


def a_learners_progress_in_every_topic(
    database_url: str, challenges: Catalog, username: str
) -> None:
    """Through the services, what a learner a few weeks in has: in every topic some practice
    right, cards studied, a quiz, every explain-it item tried (one best per item: the widest
    cell), a lab passed; and a class with every topic assigned, so each row shows a due date."""
    now = datetime.now(UTC)
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        teacher = User(username=f"{username}-teacher", is_guest=False, created_at=now)
        session.add(teacher)
        session.commit()
        assert user.id is not None
        klass = classes.create_class(session, "Distributed PyTorch, autumn", teacher, now)
        classes.join(session, user, klass, "code", now)
        due = class_rules.Window(
            now - timedelta(days=1), now + timedelta(days=3), now + timedelta(days=9)
        )
        for topic in challenges.topics():
            classes.add_assignment(session, klass, "", topic.title, due, None, 0, topic_id=topic.id)
            for entry in topic.practice[: max(1, len(topic.practice) // 2)]:
                modes.record_answer(session, user.id, entry, "practice", "x", True, now)
            for entry in topic.cards[1:]:
                review.grade(session, user.id, modes.card_key(entry), Grade.GOOD, "flashcards", now)
            if topic.practice or topic.cards:
                quiz = modes.start_quiz(session, user.id, topic, now, random.Random(3))
                state = modes.quiz_for_user(session, quiz.id or 0, user.id)
                for position, (deck, item) in enumerate(state.questions):
                    entry = challenges.entry(deck, item)
                    assert entry is not None
                    modes.answer_quiz(session, state, position, entry, "x", position % 2 == 0, now)
            for entry in topic.explain:
                modes.record_answer(session, user.id, entry, "explain", "x", False, now, points=1)
    engine.dispose()


def test_the_progress_table_shows_every_column_at_a_desktop_width(
    browser, live_server, live_database_url, live_folder
):
    """At 1280 px the table of topics fits its box: no column is hidden off to the right behind a
    sideways scroll (on a phone it may scroll inside its box; the page never does). The learner
    has progress in every topic of the shipped course, so every cell says something."""
    context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    register(page, "wide-table-learner")
    challenges = Catalog.load(live_folder / "challenges")
    ddp = challenges.topic("ddp")
    assert ddp is not None and ddp.labs
    with ThreadPoolExecutor(1) as writer:  # the app's writes run off the event loop's thread
        writer.submit(
            a_learners_progress_in_every_topic, live_database_url, challenges, "wide-table-learner"
        ).result()
        writer.submit(
            pass_lab, live_database_url, challenges, "wide-table-learner", ddp.labs[0].lab.id
        ).result()
    page.goto("/me/progress")
    expect(page.get_by_test_id("due-date").first).to_be_visible()
    box = page.locator(".table-scroll:has([data-testid='topic-progress'])")
    hidden = box.evaluate("(el) => el.scrollWidth - el.clientWidth")
    last = page.locator("[data-testid='topic-progress'] thead th").last.bounding_box()
    page.set_viewport_size({"width": WIDTH, "height": 844})
    page_on_phone = overflow(page)
    context.close()
    assert hidden <= 0, f"{hidden} px of the progress table are off to the right at 1280 px"
    assert last is not None and last["x"] + last["width"] <= 1280
    assert page_on_phone <= 0, "at 390 px the table may scroll in its box, the page never"

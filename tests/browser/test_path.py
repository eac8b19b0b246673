"""The course path in a real browser: a first visit's "Start here" reaches the first topic's
lesson in one click, "Start as guest" signs in and goes there, a returning learner's "Continue"
lands on their open attempt, and the progress page shows a passed lab, learned cards, a quiz
and an explain-it result (made through the app's services on the live database); home and
progress pass axe at 1280 and 390 px."""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect
from sqlmodel import Session, select

from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.db import make_engine
from app.labs import service as labs
from app.modes import service as modes
from app.review import service as review
from app.review.scheduling import Grade
from tests.browser.test_axe import blocking_violations
from tests.browser.test_axe import results as finish_a_set_with_its_badge

pytestmark = pytest.mark.browser
FIRST_LESSON = "/topics/process-groups/lesson"  # the shipped path's first topic


def test_start_here_reaches_the_first_lesson_within_two_clicks(page: Page):
    page.goto("/")
    start = page.get_by_test_id("start-here")
    expect(start).to_have_attribute("href", FIRST_LESSON)
    start.click()  # one click
    page.wait_for_url(re.compile(re.escape(FIRST_LESSON) + "$"))


def test_start_as_guest_signs_in_and_opens_the_first_step(page: Page):
    page.goto("/")
    page.get_by_test_id("start-guest").click()
    page.wait_for_url(re.compile(re.escape(FIRST_LESSON) + "$"))
    page.goto("/")
    expect(page.get_by_test_id("who")).to_be_visible()  # signed in as a guest
    expect(page.get_by_test_id("start-guest")).to_have_count(0)


def test_a_returning_learners_continue_lands_on_the_open_attempt(page: Page):
    page.goto("/")
    page.get_by_test_id("start-guest").click()
    page.goto("/sets/test-quick")
    page.get_by_test_id("start").click()
    page.wait_for_url(re.compile(r"/attempts/(\d+)/q/1$"))
    attempt = re.search(r"/attempts/(\d+)/", page.url)
    assert attempt is not None
    page.goto("/")
    expect(page.get_by_test_id("next-step")).to_contain_text("Resume")
    page.get_by_test_id("continue").click()
    page.wait_for_url(re.compile(rf"/attempts/{attempt[1]}/q/1$"))


def register(page: Page, username: str) -> None:
    page.goto("/register")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("learns-a-lot")
    page.get_by_test_id("register").click()
    expect(page.get_by_test_id("who")).to_have_text(username)


def work_in_every_mode(database_url: str, challenges: Catalog, username: str) -> None:
    """Pass the hello lab, learn a card, finish a quiz and explain, through the services."""
    now = datetime.now(UTC)
    drill, lab = challenges.topic("drill"), challenges.lab("hello-ranks")
    assert drill is not None and lab is not None
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        assert user.id is not None
        card = challenges.entry("drill", "what-is-rank")
        assert card is not None
        review.grade(session, user.id, modes.card_key(card), Grade.EASY, "flashcards", now)
        quiz = modes.start_quiz(session, user.id, drill, now, random.Random(2))
        state = modes.quiz_for_user(session, quiz.id or 0, user.id)
        for position, (deck, item) in enumerate(state.questions):
            entry = challenges.entry(deck, item)
            assert entry is not None
            modes.answer_quiz(session, state, position, entry, "x", True, now)
        [explain] = drill.explain
        modes.record_answer(session, user.id, explain, "explain", "text", False, now, points=2)
        for step in lab.lab.steps:
            run = labs.start_run(session, user.id, lab.lab.id, step.id, 2, "code", now)
            labs.finish_run(session, run, labs.Finished("ok", None, [], True), step, now)
            for question in step.questions:
                labs.answer_question(session, user.id, "collectives", lab.lab.id, step,
                                     question.id, "4", True, now)  # fmt: skip
    engine.dispose()


def test_the_progress_page_shows_a_passed_lab_learned_cards_a_quiz_and_explain_it(
    page: Page, live_database_url, live_folder
):
    register(page, "path-walker")
    challenges = Catalog.load(live_folder / "challenges")
    # Playwright's loop runs in this thread; the services write from a thread of their own.
    with ThreadPoolExecutor(1) as writer:
        writer.submit(work_in_every_mode, live_database_url, challenges, "path-walker").result()
    page.goto("/me/progress")
    drill = page.locator('[data-testid="topic-row"][data-topic-id="drill"]')
    expect(drill.get_by_test_id("cards")).to_have_text(re.compile(r"^\s*1/3\b"))
    expect(drill.get_by_test_id("quiz")).to_have_text(re.compile(r"^\s*(\d+)/\1\s*$"))
    expect(drill.get_by_test_id("explain")).to_have_text("2/3")
    collectives = page.locator('[data-testid="topic-row"][data-topic-id="collectives"]')
    # Lab steps passed: the hello lab's two of the topic's labs' steps.
    expect(collectives.get_by_test_id("labs")).to_have_text(re.compile(r"^\s*2/\d+ steps\s*$"))
    # The calendar counts days in the browser's time zone: today is the browser's today.
    today = page.evaluate("() => new Date().toLocaleDateString('en-CA')")  # YYYY-MM-DD
    day = page.locator(f'[data-testid="day"][data-day="{today}"]')
    expect(day).not_to_have_attribute("data-count", "0")
    assert blocking_violations(page, "progress, with work in every mode", "/me/progress") == []
    page.set_viewport_size({"width": 390, "height": 844})
    found = blocking_violations(page, "progress at 390 px", "/me/progress")
    assert found == [], "\n".join(found)
    assert blocking_violations(page, "home, returning, at 390 px", "/") == []
    page.set_viewport_size({"width": 1280, "height": 900})
    assert blocking_violations(page, "home, returning", "/") == []


def pass_lab(database_url: str, challenges: Catalog, username: str, lab_id: str, *,
             last_question_open: bool = False) -> None:  # fmt: skip
    """Pass every step of a lab through the services (its checks and questions), leaving the
    last step's last question to answer in the browser when `last_question_open`."""
    now = datetime.now(UTC)
    lab, topic = challenges.lab(lab_id), challenges.topic_of_lab(lab_id)
    assert lab is not None and topic is not None
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        assert user.id is not None
        for step in lab.lab.steps:
            run = labs.start_run(session, user.id, lab_id, step.id, 2, "code", now)
            labs.finish_run(session, run, labs.Finished("ok", None, [], True), step, now)
            questions = step.questions
            if last_question_open and step is lab.lab.steps[-1]:
                questions = questions[:-1]
            for question in questions:
                labs.answer_question(session, user.id, topic.id, lab_id, step, question.id,
                                     "right", True, now)  # fmt: skip
    engine.dispose()


def test_finishing_a_lab_leads_to_the_paths_next_step(page: Page, live_database_url, live_folder):
    """The last answer of a lab finishes it; its page then offers the path's next step, the
    one home's Continue offers (not the lab's neighbour)."""
    register(page, "lab-finisher")
    challenges = Catalog.load(live_folder / "challenges")
    topic = challenges.topic("ddp")
    assert topic is not None
    first = topic.labs[0].lab
    with ThreadPoolExecutor(1) as writer:
        writer.submit(pass_lab, live_database_url, challenges, "lab-finisher", first.id,
                      last_question_open=True).result()  # fmt: skip
    last = first.steps[-1]
    page.goto(f"/labs/{first.id}/steps/{last.id}")
    question = last.questions[-1]
    form = page.locator("#questions [data-testid=question]").last
    form.get_by_test_id("numeric-input").fill(str(question.answer))
    form.get_by_test_id("submit").click()
    expect(page.get_by_test_id("step-status")).to_contain_text("Step passed")
    page.get_by_test_id("next-step").click()  # "Finish the lab: what you learned"
    page.wait_for_url(re.compile(rf"/labs/{first.id}$"))
    expect(page.get_by_test_id("lab-done")).to_be_visible()
    suggestion = page.get_by_test_id("next-suggestion").locator("a")  # a link styled as a button
    href = suggestion.get_attribute("href")
    assert href == FIRST_LESSON  # the path's first step is not done yet
    suggestion.click()
    page.wait_for_url(lambda url: f"/labs/{first.id}" not in url)
    assert page.url.endswith(href), (page.url, href)


def test_the_results_page_suggests_the_next_step(page: Page):
    finish_a_set_with_its_badge(page)
    suggestion = page.get_by_test_id("next-suggestion")
    expect(suggestion).to_contain_text("Your next step")  # the path's, as home shows it
    link = suggestion.locator("a")
    href = link.get_attribute("href")
    assert href and "/attempts/" not in href
    link.click()
    page.wait_for_url(lambda url: "/results" not in url)
    assert urlsplit(page.url).path.startswith(href), (page.url, href)


def test_the_progress_calendar_counts_days_in_the_browsers_time_zone(browser, live_server):
    """The browser names its zone (a cookie set by static/js/zone.js); the calendar's last day
    is the browser's today and the page says which zone it counts in."""
    context = browser.new_context(base_url=live_server, timezone_id="America/Los_Angeles")
    context.set_default_timeout(15_000)
    try:
        page = context.new_page()
        page.goto("/")
        page.get_by_test_id("start-guest").click()
        page.wait_for_url(re.compile(re.escape(FIRST_LESSON) + "$"))
        cookies = {cookie["name"]: cookie["value"] for cookie in context.cookies()}
        assert cookies.get("tz") == "America/Los_Angeles"
        page.goto("/me/progress")
        expect(page.get_by_test_id("calendar-zone")).to_have_text("America/Los_Angeles")
        today = page.evaluate("() => new Date().toLocaleDateString('en-CA')")  # YYYY-MM-DD
        expect(page.get_by_test_id("day").last).to_have_attribute("data-day", today)
    finally:
        context.close()

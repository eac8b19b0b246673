"""One next step everywhere: with the first topic done but its timed set, and work done in later
topics (a card graded, another set's badge, a lab, a lesson), home, progress, the results page,
the finished lab and the finished lesson all offer the same step: the path's first not done.
Each of those pages passes axe at 1280 and 390 px."""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect
from sqlmodel import Session, select

from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.db import make_engine
from app.lessons import service as lessons
from app.lessons.rules import CheckTries
from app.modes import service as modes
from app.review import service as review
from app.review.scheduling import Grade
from tests.browser.test_axe import blocking_violations
from tests.browser.test_path import pass_lab, register
from tests.conftest import TEST_CHALLENGES
from tests.support.options import check, choice_item

pytestmark = pytest.mark.browser
FIRST, LATER = "process-groups", "deadlocks"  # the shipped path's first topic, and a later one


def first_topic_done_but_its_set_and_a_later_card(
    database_url: str, challenges: Catalog, username: str
) -> None:
    """Through the services: the first topic's lesson, practice, cards, quiz and explain-it,
    then one card of a later topic graded (the work that once moved Continue there)."""
    now = datetime.now(UTC)
    topic, later = challenges.topic(FIRST), challenges.topic(LATER)
    assert topic is not None and later is not None and topic.sets
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        assert user.id is not None
        lessons.record_check(session, user.id, FIRST, CheckTries(tries=1).dumps(), True, now)
        for entry in topic.practice:
            modes.record_answer(session, user.id, entry, "practice", "x", True, now)
        for entry in topic.cards:
            review.grade(session, user.id, modes.card_key(entry), Grade.GOOD, "flashcards", now)
        quiz = modes.start_quiz(session, user.id, topic, now, random.Random(3))
        state = modes.quiz_for_user(session, quiz.id or 0, user.id)
        for position, (deck, item) in enumerate(state.questions):
            entry = challenges.entry(deck, item)
            assert entry is not None
            modes.answer_quiz(session, state, position, entry, "x", True, now)
        for entry in topic.explain:
            concepts = len(getattr(entry.item, "concepts", []))
            modes.record_answer(session, user.id, entry, "explain", "x", True, now, points=concepts)
        card, after = later.cards[0], now + timedelta(seconds=1)  # the learner's latest work
        review.grade(session, user.id, modes.card_key(card), Grade.GOOD, "flashcards", after)
    engine.dispose()


def offered(page: Page, testid: str) -> str:
    """The href of the next step a page offers (the link itself, or the one inside)."""
    found = page.get_by_test_id(testid)
    link = found if found.evaluate("e => e.tagName") == "A" else found.locator("a")
    href = link.get_attribute("href")
    assert href is not None
    return href


def axe_at_both_widths(page: Page, name: str) -> list[str]:
    """Serious or critical axe violations of the page shown, at 1280 and at 390 px."""
    path = urlsplit(page.url).path
    found = blocking_violations(page, name, path)
    page.set_viewport_size({"width": 390, "height": 844})
    found += blocking_violations(page, f"{name} at 390 px", path)
    page.set_viewport_size({"width": 1280, "height": 900})
    return found


def test_every_page_offers_the_same_next_step_whatever_was_done_elsewhere(
    page: Page, live_database_url, live_folder
):
    page.set_viewport_size({"width": 1280, "height": 900})
    register(page, "one-next-step")
    challenges = Catalog.load(live_folder / "challenges")
    topic = challenges.topic(FIRST)
    assert topic is not None
    expected = f"/sets/{topic.sets[0].set.id}"  # all of the first topic done but its timed set
    with ThreadPoolExecutor(1) as writer:
        writer.submit(first_topic_done_but_its_set_and_a_later_card, live_database_url,
                      challenges, "one-next-step").result()  # fmt: skip
    violations: list[str] = []

    page.goto("/")
    expect(page.get_by_test_id("next-step")).to_contain_text(f"Timed challenge — {topic.title}")
    assert offered(page, "continue") == expected  # not the later topic's flashcards
    violations += axe_at_both_widths(page, "home")

    # Another set's badge: its results page offers the same step.
    page.goto("/sets/test-runs")
    page.get_by_test_id("start").click()
    page.wait_for_url(re.compile(r"/q/1$"))
    check(page, choice_item(TEST_CHALLENGES / "runs", "test-runs"), "A")
    page.get_by_test_id("submit").click()
    page.get_by_test_id("next").click()
    page.wait_for_url(re.compile(r"/results$"))
    expect(page.get_by_test_id("badge")).to_be_visible()
    assert offered(page, "next-suggestion") == expected
    violations += axe_at_both_widths(page, "results")

    # A lab of a later topic finished: its page offers the same step, not the topic's next lab.
    with ThreadPoolExecutor(1) as writer:
        writer.submit(pass_lab, live_database_url, challenges, "one-next-step",
                      "hello-ranks").result()  # fmt: skip
    page.goto("/labs/hello-ranks")
    expect(page.get_by_test_id("lab-done")).to_be_visible()
    assert offered(page, "next-suggestion") == expected
    violations += axe_at_both_widths(page, "finished lab")

    # Another topic's lesson completed: its end offers the same step, not its topic's practice.
    page.goto("/topics/lesson-drill/lesson")
    check_form = page.get_by_test_id("lesson-check")
    where, who = (check_form.get_by_test_id("check-question").nth(i) for i in (0, 1))
    where.get_by_test_id("check-option").filter(has_text="In the tensor passed").click()
    who.get_by_test_id("check-option").filter(has_text="Every rank").click()
    check_form.get_by_test_id("check-submit").click()
    expect(page.get_by_test_id("check-passed")).to_be_visible()
    assert offered(page, "next-suggestion") == expected
    violations += axe_at_both_widths(page, "finished lesson")

    page.goto("/me/progress")
    assert offered(page, "continue") == expected
    violations += axe_at_both_widths(page, "progress")
    page.goto("/")
    assert offered(page, "continue") == expected  # still: none of that work moved it
    assert violations == [], "\n".join(violations)

"""Flashcards as Anki users expect, and timed questions and quizzes that keep the learner's
place, in a real browser: grades only after the flip, each with its interval; "Again" does not
bring the card back at once; undo; one queue across topics; the countdown in view on a phone;
focus on the verdict after Submit; a card not known yet is "Not yet", not an error.

The live server runs on the real clock: where a test needs cards due, it ages the learner's
cards in the database by an hour (as time passing would), never waits.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_axe import start_as_guest

pytestmark = pytest.mark.browser
DRILL = "/topics/drill/flashcards"
RED = "rgb(179, 38, 30)"  # --rl-bad, the colour of an error


def age_latest_learners_cards(database_url: str, hours: int) -> None:
    """Move the due times of the cards of the learner who graded last `hours` earlier."""
    path = database_url.removeprefix("sqlite:///")
    with closing(sqlite3.connect(path)) as db, db:
        latest = "SELECT user_id FROM review_log ORDER BY id DESC LIMIT 1"
        (user_id,) = db.execute(latest).fetchone()
        for card_id, due in db.execute(
            "SELECT id, due FROM review_card WHERE user_id = ?", (user_id,)
        ).fetchall():
            db.execute(
                "UPDATE review_card SET due = datetime(?, ?) WHERE id = ?",
                (due, f"-{hours} hours", card_id),
            )


def flip_and_grade(page: Page, grade: int) -> None:
    """Flip the shown card with Space and grade it with its number key."""
    card = page.get_by_test_id("flashcard").get_attribute("data-card-id")
    page.keyboard.press("Space")
    expect(page.get_by_test_id(f"grade-{grade}")).to_be_visible()
    page.keyboard.press(str(grade))
    page.wait_for_url(re.compile(r"graded=\d+"))
    expect(page.get_by_test_id("scheduled")).to_be_visible()
    assert card is not None


def test_grades_come_only_after_the_flip_each_with_its_interval(page: Page):
    page.goto(DRILL)
    first = page.get_by_test_id("flashcard").get_attribute("data-card-id")
    for grade in range(1, 5):
        expect(page.get_by_test_id(f"grade-{grade}")).to_be_hidden()
    page.keyboard.press("3")  # before the flip: nothing happens
    expect(page.get_by_test_id("scheduled")).to_have_count(0)
    assert "graded=" not in page.url

    page.get_by_test_id("flip").click()
    expect(page.get_by_test_id("interval-1")).to_have_text("1 min")
    expect(page.get_by_test_id("interval-3")).to_have_text("10 min")
    expect(page.get_by_test_id("interval-4")).to_have_text(re.compile(r"^\d+ d$"))
    page.get_by_test_id("grade-1").click()  # Again
    page.wait_for_url(re.compile(r"graded=\d+"))

    # Not back at once: the next card is another one, and the page says when it comes back.
    expect(page.get_by_test_id("flashcard")).not_to_have_attribute("data-card-id", first or "")
    scheduled = page.get_by_test_id("scheduled")
    expect(scheduled.get_by_test_id("next-due")).to_have_text(re.compile(r"^in 1 minute \(.+\)$"))
    # A neutral note, not a red error; the card's title as Markdown, never raw asterisks.
    assert scheduled.evaluate("e => getComputedStyle(e).color") != RED
    expect(scheduled.locator("strong")).to_have_text("rank")
    expect(scheduled).not_to_contain_text("**")
    expect(page.get_by_test_id("deck-counts")).to_have_text("0 due · 2 new today · 2 never seen")


def test_undo_puts_the_last_card_back_as_it_was(page: Page):
    page.goto(DRILL)
    first = page.get_by_test_id("flashcard").get_attribute("data-card-id")
    flip_and_grade(page, 4)
    expect(page.get_by_test_id("deck-counts")).to_have_text("0 due · 2 new today · 2 never seen")
    page.keyboard.press("u")
    page.wait_for_url(re.compile(r"undone="))
    expect(page.get_by_test_id("flashcard")).to_have_attribute("data-card-id", first or "")
    expect(page.get_by_test_id("card-state")).to_have_text("new")
    expect(page.get_by_test_id("deck-counts")).to_have_text("0 due · 3 new today · 3 never seen")
    expect(page.get_by_test_id("scheduled")).to_have_count(0)


def test_the_daily_queue_takes_due_cards_from_every_topic(page: Page, live_database_url: str):
    page.goto(DRILL)
    flip_and_grade(page, 1)  # drill's first card, due in a minute
    page.goto("/topics/ddp/flashcards")
    ddp_card = page.get_by_test_id("flashcard").get_attribute("data-card-id")
    flip_and_grade(page, 1)
    age_latest_learners_cards(live_database_url, hours=1)  # both due now

    page.get_by_test_id("nav-cards").click()
    page.wait_for_url(re.compile(r"/cards$"))
    expect(page.get_by_test_id("deck-counts")).to_contain_text("2 due")
    # Most overdue first, across topics: drill's card was graded first.
    card = page.get_by_test_id("flashcard")
    expect(card).to_have_attribute("data-topic", "drill")
    expect(card).to_have_attribute("data-card-id", "what-is-rank")
    expect(page.get_by_test_id("card-topic")).to_have_text("Drill topic")
    flip_and_grade(page, 3)
    page.wait_for_url(re.compile(r"/cards\?graded=\d+$"))
    expect(card).to_have_attribute("data-topic", "ddp")
    expect(card).to_have_attribute("data-card-id", ddp_card or "")
    flip_and_grade(page, 3)
    expect(page.get_by_test_id("deck-counts")).to_contain_text("0 due")
    expect(page.get_by_test_id("card-state")).to_have_text("new")  # then the new cards


@pytest.fixture
def phone(browser, live_server, csp_problems):
    context = browser.new_context(base_url=live_server, viewport={"width": 390, "height": 844})
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def test_on_a_phone_the_countdown_stays_in_view_beside_the_options(phone: Page):
    start_as_guest(phone, "ddp-mastery")
    timer = phone.get_by_test_id("timer")
    expect(timer).to_be_visible()
    phone.get_by_test_id("submit").scroll_into_view_if_needed()
    assert phone.evaluate("scrollY") > 300  # the options are far below the top of the page
    box = timer.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844, box
    # Still announced to screen readers.
    expect(phone.get_by_test_id("timer-announcement")).to_have_attribute("aria-live", "assertive")
    # Radios keep their shape when their option's text wraps on a phone.
    for radio in phone.locator('[data-testid="option"] input').all():
        size = radio.bounding_box()
        assert size is not None and abs(size["width"] - size["height"]) < 1, size


def test_after_submit_focus_is_on_the_verdict(page: Page):
    start_as_guest(page, "ddp-mastery")
    page.locator('[data-testid="option"] input').first.check()
    page.get_by_test_id("submit").click()
    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_be_visible()
    expect(verdict).to_be_focused()


def test_a_card_not_known_yet_in_a_quiz_is_not_yet_and_focus_is_on_it(page: Page):
    page.goto("/topics/drill/quiz")
    page.get_by_test_id("start-quiz").click()
    page.wait_for_url(re.compile(r"/quizzes/\d+$"))
    for _ in range(10):
        if page.get_by_test_id("question").get_attribute("data-kind") == "flashcard":
            break
        page.locator('[data-testid="option"] input, [data-testid="numeric-input"]').first.click()
        if page.get_by_test_id("numeric-input").count():
            page.get_by_test_id("numeric-input").fill("1")
        page.get_by_test_id("submit").click()
        page.get_by_test_id("next").click()
        page.wait_for_url(re.compile(r"/quizzes/\d+$"))
    page.get_by_test_id("card-back").locator("summary").click()
    page.get_by_test_id("missed").click()
    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_have_text("Not yet: this card comes back in your flashcards.")
    expect(verdict).to_be_focused()
    assert verdict.evaluate("e => getComputedStyle(e).color") != RED

"""Flashcards as Anki users expect (issue 37): the grade bar in view after the flip on every
shipped card, desk and phone; learn-ahead; "Study more" kept until the learner's midnight; one
new-card limit on /cards and the topic decks; Hard's button and note agree; the nav's due count.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from playwright.sync_api import Page, expect

from app.challenges.catalog import Catalog
from app.deps import get_now
from tests.browser.test_cards import DRILL, age_latest_learners_cards, flip_and_grade
from tests.conftest import FIXTURES, FakeClock

pytestmark = pytest.mark.browser
SHIPPED = Catalog.load(FIXTURES.parents[1] / "challenges")
VIEWPORTS = ({"width": 1280, "height": 800}, {"width": 390, "height": 844})


def new_today(page: Page) -> int:
    """The "N new today" of a deck's counts."""
    counts = page.get_by_test_id("deck-counts").inner_text()
    found = re.search(r"(\d+) new today", counts)
    assert found is not None, counts
    return int(found.group(1))


def test_the_grade_bar_is_in_view_after_the_flip_on_every_shipped_card(page: Page):
    cards = [entry for topic in SHIPPED.topics() for entry in topic.cards]
    assert len(cards) > 15
    hidden = []
    for viewport in VIEWPORTS:
        page.set_viewport_size(viewport)
        for entry in cards:
            # A visitor's deck holds every card as new; "undone" shows the asked one first.
            shown = f"{entry.deck}/{entry.item.id}"
            page.goto(f"/topics/{entry.topic}/flashcards?more=20&undone={shown}")
            expect(page.get_by_test_id("flashcard")).to_have_attribute(
                "data-card-id", entry.item.id
            )
            page.keyboard.press("Space")  # the flip, as a learner does it: no scrolling
            for grade in range(1, 5):
                box = page.get_by_test_id(f"grade-{grade}").bounding_box()
                inside = box is not None and box["y"] >= 0
                if not inside or box is None or box["y"] + box["height"] > viewport["height"]:
                    hidden.append((viewport["width"], shown, grade, box))
    assert hidden == [], hidden[:8]


def test_learning_cards_come_ahead_and_hards_button_and_note_agree(page: Page):
    page.goto(DRILL)
    first = page.get_by_test_id("flashcard").get_attribute("data-card-id")
    page.keyboard.press("Space")
    button = page.get_by_test_id("interval-2").inner_text()  # Hard: "6 min"
    page.keyboard.press("2")
    page.wait_for_url(re.compile(r"graded=\d+"))
    minutes = re.fullmatch(r"(\d+) min", button)
    assert minutes is not None, button
    expect(page.get_by_test_id("next-due")).to_have_text(
        re.compile(rf"^in {minutes.group(1)} minutes \(.+\)$")
    )
    flip_and_grade(page, 2)
    flip_and_grade(page, 2)
    # Every card seen, each due within minutes: the first comes ahead, no "come back later".
    expect(page.get_by_test_id("deck-done")).to_have_count(0)
    expect(page.get_by_test_id("flashcard")).to_have_attribute("data-card-id", first or "")
    expect(page.get_by_test_id("card-state")).to_have_text("due")


def test_the_nav_counts_the_cards_due(page: Page, live_database_url: str):
    page.goto(DRILL)
    flip_and_grade(page, 1)
    age_latest_learners_cards(live_database_url, hours=1)  # due now
    page.goto("/")
    expect(page.get_by_test_id("nav-cards").get_by_test_id("cards-count")).to_have_text("1")


@pytest.fixture
def los_angeles(browser, live_server, live_app, csp_problems):
    """A learner in Los Angeles, on a server clock the test sets."""
    clock = FakeClock()
    live_app.dependency_overrides[get_now] = clock
    context = browser.new_context(base_url=live_server, timezone_id="America/Los_Angeles")
    context.set_default_timeout(15_000)
    try:
        yield context.new_page(), clock
    finally:
        context.close()
        live_app.dependency_overrides.pop(get_now, None)


def test_study_more_lasts_until_the_learners_midnight_and_every_deck_counts_one_limit(
    los_angeles,
):
    page, clock = los_angeles
    clock.now = datetime(2026, 11, 28, 18, 0, tzinfo=UTC)  # Saturday 10:00 in Los Angeles
    page.goto(DRILL)
    for _ in range(3):  # a guest now, with three new cards seen today
        flip_and_grade(page, 4)
    page.goto("/cards")
    base = new_today(page)
    page.goto("/topics/ddp/flashcards")
    # One limit: a topic's deck offers what is left of the day's new cards, as /cards does
    # (this deck has more unseen cards than that).
    assert new_today(page) == base
    page.goto("/cards?more=1")  # "Study more", as its link asks
    raised = new_today(page)
    assert raised > base
    clock.now = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)  # 23:00 there: the same day
    page.goto("/")
    page.goto("/cards")
    assert new_today(page) == raised
    page.goto("/topics/ddp/flashcards")
    assert new_today(page) > base  # every card this deck has left: more than the day's limit
    clock.now = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)  # 01:00 on Sunday there
    page.goto("/cards")
    assert new_today(page) == base + 3  # a new day: the cards seen yesterday count no more

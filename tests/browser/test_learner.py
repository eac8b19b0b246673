"""A learner in a real browser: takes a whole set to the badge, runs out of time, comes back."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from app.challenges import variants
from app.challenges.loader import load_path
from app.challenges.schema import ChoiceBase, NumericItem
from app.config import ROOT
from tests.conftest import TEST_CHALLENGES, FakeClock
from tests.support.live import serving
from tests.support.options import check, choice_item, shown_as

pytestmark = pytest.mark.browser
SET_ID = "ddp-mastery"
RUNS_ITEM = choice_item(TEST_CHALLENGES / "runs", "test-runs")  # keyed A


def shipped_set():
    report = load_path(ROOT / "challenges")
    return next(loaded.challenge_set for loaded in report.sets if loaded.challenge_set.id == SET_ID)


def as_shown(html: str, item):
    """The item as the page shows it: a parameterised item's variant is the one whose every
    option the page shows (the server pinned it; the learner reads only its rendering)."""
    if not variants.params_of(item):
        return item
    for variant in variants.variants_of(item):
        shown = variants.render(item, variant.key)
        try:
            for option in shown.options:
                shown_as(html, shown, option.id)
        except AssertionError:
            continue
        return shown
    raise AssertionError(f"no variant of {item.id} matches the page")


def seconds(label: str) -> int:
    minutes, secs = label.strip().split(":")
    return int(minutes) * 60 + int(secs)


def start_set(page, set_id: str) -> None:
    page.goto("/")
    page.get_by_test_id("start-guest").click()
    page.goto(f"/sets/{set_id}")
    page.get_by_test_id("start").click()


def test_a_learner_takes_a_whole_set_and_earns_the_badge(page):
    challenge_set = shipped_set()
    start_set(page, SET_ID)
    for number, item in enumerate(challenge_set.items, start=1):
        page.wait_for_url(re.compile(rf"/q/{number}$"))
        item = as_shown(page.content(), item)
        expect(page.get_by_role("heading", name=item.title)).to_be_visible()
        # Before answering: no key, no explanation, no feedback anywhere in the page.
        assert page.get_by_test_id("key-mark").count() == 0
        assert page.get_by_test_id("explanation").count() == 0
        assert item.explanation[:60] not in page.content()
        if number == 1:
            timer = page.get_by_test_id("timer")
            first = timer.inner_text()
            expect(timer).not_to_have_text(first)  # it ticks: wait for the label to change
            assert seconds(timer.inner_text()) < seconds(first)
        if item.hint is not None and page.get_by_test_id("show-hint").count():
            page.get_by_test_id("show-hint").click()
            expect(page.get_by_test_id("hint")).to_be_visible()
        if isinstance(item, NumericItem):
            page.get_by_test_id("numeric-input").fill(str(item.answer))
        else:
            assert isinstance(item, ChoiceBase)
            check(page, item, *sorted(item.answer_ids))
        page.get_by_test_id("submit").click()
        expect(page.get_by_test_id("verdict")).to_have_text(re.compile("^✓ Correct"))
        expect(page.get_by_test_id("explanation")).to_be_visible()
        page.get_by_test_id("next").click()
    page.wait_for_url(re.compile(r"/results$"))
    expect(page.get_by_test_id("badge")).to_be_visible()
    assert challenge_set.badge.name in page.get_by_test_id("badge").inner_text()
    page.goto("/me/progress")
    assert challenge_set.badge.name in page.get_by_test_id("badges").inner_text()


def test_when_time_runs_out_the_question_closes_and_the_next_one_opens(page):
    start_set(page, "test-quick")
    page.wait_for_url(re.compile(r"/q/1$"))
    assert seconds(page.get_by_test_id("timer").inner_text()) <= 10
    # The timer hits 0:00 by itself: the page says so, shows the key and the explanation.
    expect(page.get_by_test_id("verdict")).to_contain_text("Time's up", timeout=20_000)
    assert page.get_by_test_id("timer-announcement").count() == 0  # the timer has gone
    expect(page.get_by_test_id("key-mark")).to_be_visible()
    expect(page.get_by_test_id("explanation")).to_be_visible()
    assert page.get_by_test_id("submit").count() == 0
    page.get_by_test_id("next").click()
    page.wait_for_url(re.compile(r"/q/2$"))


@pytest.fixture
def clocked_server(app_factory, sqlite_url: str, clock: FakeClock) -> Iterator[str]:
    """A live server of this test's own on the fake clock (the shared one keeps real time)."""
    with serving(app_factory(sqlite_url, challenges_dir=ROOT / "challenges")) as base_url:
        yield base_url


def test_closing_the_browser_and_coming_back_resumes_with_the_clock_still_right(
    browser, clocked_server, clock
):
    away_s = 45
    context = browser.new_context(base_url=clocked_server)
    context.set_default_timeout(15_000)
    page = context.new_page()
    start_set(page, SET_ID)
    page.wait_for_url(re.compile(r"/q/1$"))
    before = seconds(page.get_by_test_id("timer").inner_text())
    state = context.storage_state()
    context.close()
    clock.advance(away_s)  # the learner is away; the server's clock runs on
    context = browser.new_context(base_url=clocked_server, storage_state=state)
    again = context.new_page()
    again.goto(f"/sets/{SET_ID}")
    assert again.get_by_test_id("start").inner_text() == "Resume"
    again.get_by_test_id("start").click()
    again.wait_for_url(re.compile(r"/q/1$"))
    after = seconds(again.get_by_test_id("timer").inner_text())
    # The page counts down in real time too: allow the second or two this test itself takes.
    assert before - away_s - 2 <= after <= before - away_s
    context.close()


def test_after_answering_the_learner_runs_the_snippet_and_sees_each_rank(page):
    start_set(page, "test-runs")
    page.wait_for_url(re.compile(r"/q/1$"))
    assert page.get_by_test_id("run-it").count() == 0  # not before answering
    check(page, RUNS_ITEM, "A")
    page.get_by_test_id("submit").click()
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("run-summary")).to_contain_text("ok ·", timeout=30_000)
    for rank in (0, 1):
        expect(page.get_by_test_id(f"rank-{rank}")).to_contain_text("1.0")
    expect(page.get_by_test_id("run-summary")).to_contain_text("torch 2.13.0")


def test_the_first_tab_reaches_a_skip_link_to_the_content(page):
    page.goto("/")
    page.keyboard.press("Tab")
    expect(page.get_by_test_id("skip-link")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert icon is not None and page.request.get(icon).ok


def test_one_click_on_a_set_page_starts_it_as_a_guest(page):
    page.goto("/sets/test-quick")
    page.get_by_test_id("start-guest").click()
    page.wait_for_url(re.compile(r"/q/1$"))
    expect(page.get_by_test_id("who")).to_be_visible()  # signed in as a guest, one click


def test_a_guest_is_warned_before_logging_out_and_offered_an_account(page):
    page.goto("/sets/test-quick")
    page.get_by_test_id("start-guest").click()
    page.wait_for_url(re.compile(r"/q/1$"))
    page.get_by_test_id("logout").click()
    expect(page.get_by_test_id("guest-warning")).to_contain_text("gone for good")
    page.get_by_test_id("keep-progress").click()
    page.wait_for_url(re.compile(r"/register$"))
    page.goto("/logout")
    page.get_by_test_id("confirm-logout").click()
    page.wait_for_url(re.compile(r"/$"))
    expect(page.get_by_test_id("who")).to_have_count(0)

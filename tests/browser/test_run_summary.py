"""The line under a finished run speaks plainly: "2 ranks", not "2 rank(s)"."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_learner import RUNS_ITEM, start_set
from tests.support.options import check

pytestmark = pytest.mark.browser


def run_summary(page) -> str:
    """Answer the runs question, press Run it and return the line under the finished run."""
    start_set(page, "test-runs")
    page.wait_for_url(re.compile(r"/q/1$"))
    check(page, RUNS_ITEM, "A")
    page.get_by_test_id("submit").click()
    page.get_by_test_id("run-button").click()
    summary = page.get_by_test_id("run-summary")
    expect(summary).to_contain_text("ok ·", timeout=30_000)
    return summary.inner_text()


def test_the_run_summary_counts_ranks_in_words(page):
    text = run_summary(page)
    assert "gloo on cpu, 2 ranks" in text and "rank(s)" not in text, text


def test_the_run_summary_says_when_it_was_observed_in_the_learners_zone(browser, live_server):
    # A learner in Los Angeles reads the time as every page writes it ("Sun 29 Nov 2026, 02:30
    # PST"), not the executor's ISO string in UTC ("2026-11-29T10:30:00.000Z").
    context = browser.new_context(base_url=live_server, timezone_id="America/Los_Angeles")
    try:
        text = run_summary(context.new_page())
    finally:
        context.close()
    shown = r"observed \w{3} \d{2} \w{3} \d{4}, \d{2}:\d{2} (PST|PDT|GMT-[78])"
    assert re.search(shown, text), text
    assert not re.search(r"\d{4}-\d{2}-\d{2}T", text), text

"""The line under a finished run speaks plainly: "2 ranks", not "2 rank(s)"."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.test_learner import RUNS_ITEM, start_set
from tests.support.options import check


def test_the_run_summary_counts_ranks_in_words(page):
    start_set(page, "test-runs")
    page.wait_for_url(re.compile(r"/q/1$"))
    check(page, RUNS_ITEM, "A")
    page.get_by_test_id("submit").click()
    page.get_by_test_id("run-button").click()
    summary = page.get_by_test_id("run-summary")
    expect(summary).to_contain_text("ok ·", timeout=30_000)
    expect(summary).to_contain_text("gloo on cpu, 2 ranks")
    assert "rank(s)" not in summary.inner_text()

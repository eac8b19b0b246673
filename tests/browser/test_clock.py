"""One clock: every time a page shows is in the learner's zone, as their browser names it."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest
from playwright.sync_api import expect

from tests.browser.test_axe import progress

pytestmark = pytest.mark.browser
# Saturday 28 November 2026, 19:30 in Los Angeles (PST, UTC-8): already Sunday in UTC.
SATURDAY_EVENING_IN_LOS_ANGELES = "2026-11-29 03:30:00.000000"


def test_a_badge_earned_on_a_saturday_evening_in_los_angeles_is_dated_saturday(
    browser, live_server, live_database_url, csp_problems
):
    context = browser.new_context(base_url=live_server, timezone_id="America/Los_Angeles")
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        progress(page)  # earns a badge, then shows it on the progress page
        path = live_database_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as db, db:
            db.execute(
                "UPDATE set_attempt SET finished_at = ? WHERE id = (SELECT max(id) FROM "
                "set_attempt WHERE finished_at IS NOT NULL)",
                (SATURDAY_EVENING_IN_LOS_ANGELES,),
            )
        page.reload()
        badge = page.get_by_test_id("earned-badge").first
        expect(badge).to_contain_text("Sat 28 Nov 2026, 19:30 PST")
    finally:
        context.close()

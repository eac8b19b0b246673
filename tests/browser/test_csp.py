"""The Content-Security-Policy holds in a real browser: no violation on the main pages, and the
countdown, Run it (Alpine's CSP build), hints (htmx) and every form keep working under it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from app.accounts.models import Role
from tests.conftest import TEST_CHALLENGES
from tests.support.accounts import set_role
from tests.support.options import check, choice_item

pytestmark = pytest.mark.browser


def test_the_learner_pages_work_without_breaking_the_policy(page, csp_problems):
    home = page.goto("/")
    assert home is not None
    policy = home.headers["content-security-policy"]
    assert "'unsafe-eval'" not in policy and "'unsafe-inline'" not in policy
    for url in ("/login", "/register", "/sets/test-runs"):
        page.goto(url)
        assert csp_problems == [], url

    page.goto("/")
    page.get_by_test_id("start-guest").click()
    page.goto("/sets/test-runs")
    page.get_by_test_id("start").click()
    page.wait_for_url(re.compile(r"/q/1$"))
    timer = page.get_by_test_id("timer")
    first = timer.inner_text()
    expect(timer).not_to_have_text(first)  # Alpine's countdown ticks
    check(page, choice_item(TEST_CHALLENGES / "runs", "test-runs"), "A")
    page.get_by_test_id("submit").click()
    page.get_by_test_id("run-button").click()  # Alpine's Run it streams each rank's output
    expect(page.get_by_test_id("run-summary")).to_contain_text("ok ·", timeout=30_000)
    expect(page.get_by_test_id("rank-1")).to_contain_text("rank 1")
    assert csp_problems == []

    # Signing up replaces the session and the CSRF seed: the next page's forms still work.
    page.goto("/register")
    page.get_by_label("Username").fill("csp-learner")
    page.get_by_label("Password").fill("no-inline-please")
    page.get_by_test_id("register").click()
    page.wait_for_url(re.compile(r"/me/progress$"))
    expect(page.get_by_test_id("who")).to_have_text("csp-learner")
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/$"))
    expect(page.get_by_test_id("who")).to_have_count(0)
    assert csp_problems == []


def test_a_hint_arrives_through_htmx_within_the_policy(page, csp_problems):
    page.goto("/")
    page.get_by_test_id("start-guest").click()
    page.goto("/sets/ddp-mastery")
    page.get_by_test_id("start").click()
    page.wait_for_url(re.compile(r"/q/1$"))
    with page.expect_response(lambda response: response.url.endswith("/hint")):
        page.get_by_test_id("show-hint").click()
    expect(page.get_by_test_id("hint")).to_be_visible()
    # The button the keyboard was on is gone: focus moves to the hint, not back to the page.
    expect(page.get_by_test_id("hint")).to_be_focused()
    assert csp_problems == []


def test_the_staff_content_and_preview_pages_keep_the_policy(page, csp_problems, live_database_url):
    page.goto("/register")
    page.get_by_label("Username").fill("csp-teacher")
    page.get_by_label("Password").fill("no-inline-please")
    page.get_by_test_id("register").click()
    page.wait_for_url(re.compile(r"/me/progress$"))
    set_role(live_database_url, "csp-teacher", Role.INSTRUCTOR)
    page.goto("/staff/content")
    expect(page.get_by_test_id("content-file").first).to_be_visible()
    page.goto("/staff/sets/test-runs/preview")
    expect(page.get_by_test_id("preview-item").first).to_be_visible()
    assert csp_problems == []


def test_the_api_docs_render_from_vendored_files_within_their_policy(page, csp_problems):
    # Swagger UI is served from static/vendor: it renders with no network beyond this site.
    external: list[str] = []
    page.on(
        "request",
        lambda request: None if "127.0.0.1" in request.url else external.append(request.url),
    )
    page.goto("/api/docs")
    expect(page.locator(".opblock").first).to_be_visible(timeout=15_000)
    expect(page.get_by_text("/api/attempts/{attempt_id}/q/{number}").first).to_be_visible()
    assert external == []
    assert csp_problems == []

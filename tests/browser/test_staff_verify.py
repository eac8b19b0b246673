"""An instructor in a real browser previews a lab and a topic, and verifies a lab for real;
the new staff pages pass axe at a desktop's and a phone's width."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.accounts.models import Role
from tests.browser.conftest import watch_csp
from tests.browser.test_axe import AXE, BLOCKING, NARROW, describe
from tests.support.accounts import set_role

pytestmark = pytest.mark.browser

LAB = "hello-ranks"  # the lab fixture the live server serves (tests/fixtures/labs/hello)
TOPIC = "ddp"


def sign_in_as_instructor(page: Page, database_url: str, username: str) -> None:
    """Register, become an instructor, and have axe in every page from now on (outside the
    page's Content-Security-Policy, as test_axe.py injects it)."""
    page.add_init_script(path=str(AXE))
    page.goto("/register")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("checks-labs")
    page.get_by_test_id("register").click()
    page.wait_for_url(re.compile(r"/me/progress$"))
    set_role(database_url, username, Role.INSTRUCTOR)


def blocking(page: Page) -> list[str]:
    """The page's serious and critical axe violations, described."""
    report = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [describe(v) for v in report["violations"] if v["impact"] in BLOCKING]


def test_an_instructor_previews_a_lab_and_a_topic_and_verifies_the_lab(
    page: Page, live_database_url
):
    sign_in_as_instructor(page, live_database_url, "browser-lab-checker")
    page.goto("/")
    page.get_by_test_id("nav-content").click()
    lab_row = page.locator(f'[data-testid="content-lab"][data-lab-id="{LAB}"]')
    expect(lab_row).to_be_visible()
    assert blocking(page) == [], "content page"

    page.locator(f'[data-testid="content-topic"][data-topic-id="{TOPIC}"]').get_by_test_id(
        "topic-preview-link"
    ).click()
    expect(page.get_by_test_id("preview-card").first).to_be_visible()
    expect(page.get_by_test_id("card-back").first).to_be_visible()
    expect(page.get_by_test_id("preview-cheat-sheet")).to_be_visible()
    assert blocking(page) == [], "topic preview"

    page.goto("/staff/content")
    lab_row.get_by_test_id("lab-preview-link").click()
    expect(page.get_by_test_id("preview-step")).to_have_count(2)
    expect(page.get_by_test_id("step-check").first).to_contain_text(
        "Every rank prints its rank and the world size"
    )
    page.get_by_test_id("verify-lab-button").click()
    report = page.get_by_test_id("verify-report")
    expect(report).to_have_attribute("data-job-state", "done", timeout=240_000)
    expect(report).to_have_attribute("data-passed", "true")
    results = page.get_by_test_id("verify-result")
    expect(results).to_have_count(2)
    for verdict in results.all():
        expect(verdict).to_have_attribute("data-verdict", "pass")
    expect(page.get_by_test_id("verdict-lines").first).to_contain_text(
        f"PASS challenges/hello-lab/lab.yaml {LAB} step print-rank"
    )
    assert blocking(page) == [], "lab preview with its verdicts"


@pytest.mark.parametrize(
    "path", ["/staff/content", f"/staff/topics/{TOPIC}/preview", f"/staff/labs/{LAB}/preview"]
)
def test_the_new_staff_pages_pass_axe_at_a_phone_width(
    browser, live_server, live_database_url, csp_problems, path
):
    context = browser.new_context(base_url=live_server, viewport={"width": NARROW, "height": 844})
    context.set_default_timeout(15_000)
    watch_csp(context, csp_problems)
    page = context.new_page()
    sign_in_as_instructor(page, live_database_url, f"narrow-{path.count('/')}-{len(path)}")
    page.goto(path)
    found = blocking(page)
    context.close()
    assert found == [], "\n".join(found)
    assert csp_problems == []

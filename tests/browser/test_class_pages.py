"""Classes in a real browser: due dates in the learner's own zone on home, a set, its topic and
progress; the instructor's per-assignment view; and the class pages (instructor's class page,
per-assignment view, a learner's results, join, My classes) with no serious or critical axe
violation and no sideways scroll at 1280 and 390 px."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Page, expect

from app.classes import rules
from tests.browser.conftest import watch_csp
from tests.browser.test_axe import BLOCKING, NARROW, blocking_violations, describe
from tests.browser.test_instructor import sign_up_as_instructor

pytestmark = pytest.mark.browser
LEARNER_ZONE = "Asia/Tokyo"  # not the machine's: the page must use the learner's own zone


def typed(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M")  # a datetime-local field, in the browser's zone


@pytest.fixture(scope="module")
def a_class(browser, live_server, live_database_url) -> Iterator[dict]:
    """A class with one learner (in a group) and test-runs due in three days at 17:00 UTC;
    each person's signed-in browser state, to open pages as them."""
    teacher = browser.new_context(base_url=live_server, timezone_id="UTC")
    page = teacher.new_page()
    sign_up_as_instructor(page, live_database_url, "dues-teacher")
    page.goto("/staff/classes")
    page.get_by_label("New class title").fill("Due dates 101")
    page.get_by_role("button", name="Create class").click()
    page.wait_for_url(re.compile(r"/staff/classes/\d+$"))
    class_url, code = page.url, page.get_by_test_id("join-code").inner_text()
    now = datetime.now(UTC)
    due = (now + timedelta(days=3)).replace(hour=17, minute=0, second=0, microsecond=0)
    page.get_by_label("Set, or a whole topic").select_option("test-runs")
    page.get_by_label("Opens").fill(typed(now - timedelta(hours=1)))
    page.get_by_label("Due", exact=True).fill(typed(due))
    page.get_by_role("button", name="Add assignment").click()
    expect(page.get_by_test_id("assignment")).to_have_count(1)

    learner = browser.new_context(base_url=live_server, timezone_id=LEARNER_ZONE)
    mine = learner.new_page()
    mine.goto("/register")
    mine.get_by_label("Username").fill("dues-learner")
    mine.get_by_label("Password").fill("learns-on-time")
    mine.get_by_test_id("register").click()
    mine.wait_for_url(re.compile(r"/me/progress$"))
    mine.goto(f"/join?code={code}")
    mine.get_by_role("button", name="Join").click()
    mine.wait_for_url(re.compile(r"/me/classes$"))

    page.goto(class_url)
    page.get_by_label("New group name").fill("lab section B")
    page.get_by_role("checkbox", name="dues-learner").check()
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_test_id("group")).to_contain_text("dues-learner")
    view_url = page.get_by_test_id("assignment-view").get_attribute("href")
    page.goto(view_url or "")
    learner_url = page.get_by_test_id("learner-results").get_attribute("href")
    yield {
        "learner results": learner_url,
        "class": class_url,
        "misconceptions": f"{class_url}/misconceptions",
        "view": view_url,
        "due": due,
        "teacher": teacher.storage_state(),
        "learner": learner.storage_state(),
    }
    teacher.close()
    learner.close()


def open_as(browser, live_server, state, csp_problems, width: int = 1280, zone: str = "UTC"):
    context = browser.new_context(
        base_url=live_server,
        storage_state=state,
        timezone_id=zone,
        viewport={"width": width, "height": 844},
    )
    context.set_default_timeout(15_000)
    watch_csp(context, csp_problems)
    return context


def test_the_due_date_shows_in_the_learners_zone_on_home_set_topic_and_progress(
    browser, live_server, a_class, csp_problems
):
    context = open_as(browser, live_server, a_class["learner"], csp_problems, zone=LEARNER_ZONE)
    page = context.new_page()
    page.goto("/")  # the zone's cookie is set by this page's script, for the next pages
    zone = ZoneInfo(LEARNER_ZONE)
    expected = rules.due_phrase(a_class["due"], datetime.now(UTC), zone)
    assert expected.endswith("02:00")  # 17:00 UTC is 02:00 the next day in Tokyo
    for path in ("/", "/sets/test-runs", "/topics/collectives", "/me/progress"):
        page.goto(path)
        badge = page.get_by_test_id("due-date")
        expect(badge).to_have_count(1)
        expect(badge).to_have_text(expected)
        expect(badge).to_have_attribute("data-state", "due")
    page.goto("/me/classes")
    expect(page.get_by_test_id("due")).to_have_text(expected)
    context.close()
    assert csp_problems == []


def test_the_instructor_sees_the_learner_by_status_with_their_group(
    browser, live_server, a_class, csp_problems
):
    context = open_as(browser, live_server, a_class["teacher"], csp_problems)
    page = context.new_page()
    page.goto(a_class["view"])
    row = page.locator('[data-testid="learner-row"][data-username="dues-learner"]')
    expect(row.get_by_test_id("status")).to_have_text("not started")
    page.get_by_label("Group").select_option(label="lab section B (1)")
    page.get_by_label('Time × (or "untimed")').fill("1.5")
    page.get_by_role("button", name="Grant to the group").click()
    expect(row.get_by_test_id("extension")).to_have_text("group lab section B, time ×1.5")
    csv_text = page.request.get(f"{a_class['view']}/view.csv").text()
    assert "dues-learner" in csv_text and "group lab section B, time ×1.5" in csv_text
    context.close()
    assert csp_problems == []


WIDER_THAN = """width => [...document.querySelectorAll("body *")]
  .filter((element) => element.getBoundingClientRect().right > width)
  .slice(0, 8)
  .map((element) => `${element.tagName}[${element.dataset.testid || ""}]`)"""
CLASS_PAGES = [
    ("class, instructor's page", "teacher", "class"),
    ("class, misconceptions", "teacher", "misconceptions"),
    ("class, per-assignment view", "teacher", "view"),
    ("class, a learner's results", "teacher", "learner results"),
    ("class, join", "learner", "/join"),
    ("class, my classes", "learner", "/me/classes"),
]


@pytest.mark.parametrize(("name", "who", "where"), CLASS_PAGES, ids=[n for n, *_ in CLASS_PAGES])
def test_the_class_page_passes_axe_and_fits_at_1280_and_390_px(
    browser, live_server, a_class, csp_problems, name, who, where
):
    context = open_as(browser, live_server, a_class[who], csp_problems)
    page: Page = context.new_page()
    path = a_class.get(where, where)
    assert (found := blocking_violations(page, name, path)) == [], "\n".join(found)
    for width in (1280, NARROW):
        page.set_viewport_size({"width": width, "height": 844})
        page.reload()  # laid out afresh at this width, axe injected again
        if width == NARROW:
            report = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
            found = [describe(v) for v in report["violations"] if v["impact"] in BLOCKING]
            assert found == [], f"{name} at {width} px:\n" + "\n".join(found)
        scroll = int(page.evaluate("document.documentElement.scrollWidth"))
        wide = page.evaluate(WIDER_THAN, width)  # what sticks out, to say in the failure
        assert scroll <= width, f"{name} is {scroll} px wide at {width} px: {wide}"
    context.close()
    assert csp_problems == []

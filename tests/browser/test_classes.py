"""Issue 38 end to end in a real browser: an instructor creates a class and an assignment due in
a week, one learner joins by code (as a guest, then signs up), one by roster CSV, one by an LTI
launch from a simulated LMS; one gets an extension, all work, and the gradebook CSV and the
LMS's recorded score carry the scores their results pages show."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.browser.test_instructor import sign_up_as_instructor
from tests.conftest import TEST_CHALLENGES
from tests.support.lti_platform import Link, Person
from tests.support.options import check, choice_item
from tests.support.waiting import wait_for

pytestmark = pytest.mark.browser
RUNS_ITEM = choice_item(TEST_CHALLENGES / "runs", "test-runs")  # keyed A


def typed(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M")  # a datetime-local field, in the browser's zone


def take_test_runs(page) -> tuple[str, int]:
    """Start test-runs, answer its one question right; return the results page's score and
    the seconds the question's timer showed at first."""
    page.goto("/sets/test-runs")
    page.get_by_test_id("start").click()
    page.wait_for_url(re.compile(r"/q/1$"))
    minutes, secs = page.get_by_test_id("timer").inner_text().strip().split(":")
    check(page, RUNS_ITEM, "A")
    page.get_by_test_id("submit").click()
    page.get_by_test_id("next").click()
    page.wait_for_url(re.compile(r"/results$"))
    match = re.search(r"score (\d+)%", page.get_by_test_id("score").inner_text())
    assert match
    return match[1], int(minutes) * 60 + int(secs)


def test_a_class_from_creation_to_the_gradebook(page, browser, live_server, live_database_url, lms):
    sign_up_as_instructor(page, live_database_url, "class-teacher")
    page.goto("/staff/classes")
    page.get_by_label("New class title").fill("Distributed 101")
    page.get_by_role("button", name="Create class").click()
    page.wait_for_url(re.compile(r"/staff/classes/\d+$"))
    class_url = page.url
    code = page.get_by_test_id("join-code").inner_text()
    zone = page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    now = datetime.now(UTC).astimezone()  # the browser and this process share the machine's zone
    page.get_by_label("Set").select_option("test-runs")
    page.get_by_label("Opens").fill(typed(now - timedelta(hours=1)))
    page.get_by_label("Due", exact=True).fill(typed(now + timedelta(days=7)))
    page.get_by_role("button", name="Add assignment").click()
    expect(page.get_by_test_id("assignment")).to_have_count(1)
    roster = b"email,student id,name\nrosa@uni.example,S-77,Rosa Roster\n"
    page.get_by_label("Roster CSV").set_input_files(
        {"name": "roster.csv", "mimeType": "text/csv", "buffer": roster}
    )
    page.get_by_role("button", name="Upload roster").click()
    password = page.locator('[data-username="rosa"] [data-testid="first-password"]').inner_text()

    guest = browser.new_context(base_url=live_server).new_page()
    guest.goto("/")
    guest.get_by_test_id("start-guest").click()
    guest.goto("/join")
    guest.get_by_label("Class code from your instructor").fill(code.lower())
    guest.get_by_role("button", name="Join").click()
    guest.wait_for_url(re.compile(r"/me/classes$"))
    weekday = (now + timedelta(days=7)).strftime("%a")
    expect(guest.get_by_test_id("due")).to_contain_text(weekday)  # a week off: its date
    guest.goto("/register")
    guest.get_by_label("Username").fill("cody-code")
    guest.get_by_label("Password").fill("joins-by-code")
    guest.get_by_test_id("register").click()
    guest.wait_for_url(re.compile(r"/me/progress$"))
    guest.goto("/me/classes")
    expect(guest.get_by_test_id("assignment-row")).to_have_count(1)  # kept on sign-up

    rosa = browser.new_context(base_url=live_server).new_page()
    rosa.goto("/login")
    rosa.get_by_label("Username").fill("rosa")
    rosa.get_by_label("Password").fill(password)
    rosa.get_by_test_id("login").click()

    lms.add_course("course-9", "Distributed 101 (LMS)")  # its link names the class's code
    lms.links["runs"] = Link("course-9", "Test runs", {"set": "test-runs", "class": code})
    lms.enrol("course-9", "lara", Person("sub-lara", "Lara Lms", "lara@uni.example"))
    lara = browser.new_context(base_url=live_server).new_page()
    lara.goto(lms.launch_url("lara", "runs"))  # her click in the LMS's course
    lara.wait_for_url(re.compile(r"/sets/test-runs$"))

    page.goto(class_url)
    extension = page.get_by_test_id("extension-form")
    extension.get_by_label("Learner").select_option(label="rosa")
    extension.get_by_label("Time ×").fill("2")
    extension.get_by_role("button", name="Grant").click()
    page.wait_for_url(class_url)

    (cody_score, cody_time), (rosa_score, rosa_time) = take_test_runs(guest), take_test_runs(rosa)
    assert rosa_time > 1.5 * cody_time  # her extension doubles the question's time
    lara_score, _ = take_test_runs(lara)
    sent = wait_for(lambda: lms.scores_for("sub-lara"), 30, "the LMS to record Lara's score")
    assert [score["scoreGiven"] for score in sent] == [float(lara_score)]
    scores = {"cody-code": cody_score, "rosa": rosa_score}
    canvas = page.request.get(f"{class_url}/gradebook.csv?flavour=canvas")
    rows = list(csv.reader(io.StringIO(canvas.text())))
    assert rows[1][0] == "Points Possible"
    by_login = {row[3]: row[5] for row in rows[2:]}
    assert by_login == {
        "cody-code": scores["cody-code"],
        "rosa@uni.example": scores["rosa"],
        "lara@uni.example": lara_score,
    }
    assert next(row for row in rows[2:] if row[3] == "rosa@uni.example")[2] == "S-77"
    assert zone  # the page named its zone (the due date is shown in it)

"""Classes, part two, over HTTP: group extensions (a learner's own wins), topic assignments,
and the instructor's per-assignment view with its CSV, whose numbers are the learner's own."""

from __future__ import annotations

import csv
import html
import io
import re

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from app.classes import rules
from tests.classes.test_classes import assign, create_class, finish, join
from tests.support.accounts import sign_up, user_id
from tests.support.learner import Learner


@pytest.fixture
def people(app_factory, database_url):
    app = app_factory(database_url)
    with (
        TestClient(app) as one,
        TestClient(app) as two,
        TestClient(app) as three,
        TestClient(app) as four,
    ):
        teacher, ana, ben, cy = Learner(one), Learner(two), Learner(three), Learner(four)
        sign_up(teacher, "teach", database_url, Role.INSTRUCTOR)
        yield teacher, ana, ben, cy, database_url


def enrol(teacher: Learner, code: str, database_url: str, *pairs: tuple[Learner, str]) -> None:
    for person, name in pairs:
        sign_up(person, name, database_url)
        join(person, code)


def assignment_url(teacher: Learner, url: str) -> str:
    found = re.findall(r'href="(/staff/classes/\d+/assignments/\d+)"', teacher.get(url).text)
    assert found
    return found[-1]


def make_group(teacher: Learner, url: str, name: str, *user_ids: int) -> str:
    response = teacher.post(
        f"{url}/groups", {"name": name, "user_id": list(user_ids)}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    page = teacher.get(url).text
    found = re.search(rf'data-group-name="{re.escape(name)}".*?/groups/(\d+)/members', page, re.S)
    assert found, page
    return found[1]


def test_a_group_extension_moves_its_members_dates_and_time_and_an_own_extension_wins(
    people, clock
):
    teacher, ana, ben, _cy, database_url = people
    url, code = create_class(teacher)
    assign(teacher, url)  # due (and closes) Friday 17:00
    enrol(teacher, code, database_url, (ana, "ana"), (ben, "ben"))
    ana_id = user_id(database_url, "ana")
    group = make_group(teacher, url, "accessibility x1.5", ana_id)
    view = assignment_url(teacher, url)
    granted = teacher.post(
        f"{view}/group-extensions",
        {"group_id": group, "time_multiplier": "1.5", "due_at": "2026-11-30T17:00"},
        follow_redirects=False,
    )
    assert granted.status_code == 303, granted.text
    row = re.search(
        r'data-username="ana".*?data-testid="extension">([^<]*)<', teacher.get(view).text, re.S
    )
    assert row and row[1].startswith("group accessibility x1.5, time ×1.5, due Mon 30 Nov 17:00")
    assert "due Mon 30 Nov 2026 17:00" in ana.get("/me/classes").text  # her group's date
    clock.advance(6 * 86400)  # Saturday: past the class's close
    assert ben.post("/sets/test-basics/start", follow_redirects=False).status_code == 409
    attempt = ana.start("test-basics")
    assert ana.get(f"/api{attempt}/q/1").json()["seconds_left"] == 90  # 60 s × 1.5
    # Her own extension (dates unchanged, ×1) wins whole over the group's: she is closed too.
    extension = f"{view}/extensions"
    own = teacher.post(
        extension, {"user_id": ana_id, "time_multiplier": "1"}, follow_redirects=False
    )
    assert own.status_code == 303, own.text
    assert "closed, was due Fri 27 Nov 17:00" in ana.get("/me/classes").text


def test_a_group_is_refused_for_someone_outside_the_class_and_a_name_twice(people):
    teacher, ana, _ben, _cy, database_url = people
    url, _code = create_class(teacher)
    sign_up(ana, "ana", database_url)  # not in the class
    outsider = teacher.post(
        f"{url}/groups", {"name": "B", "user_id": [user_id(database_url, "ana")]}
    )
    assert outsider.status_code == 400 and "must be in this class" in outsider.text
    assert teacher.post(f"{url}/groups", {"name": "B"}, follow_redirects=False).status_code == 303
    twice = teacher.post(f"{url}/groups", {"name": "B"})
    assert twice.status_code == 409 and "already" in twice.text


def view_rows(teacher: Learner, view: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(teacher.get(f"{view}/view.csv").text)))


def test_the_assignment_view_shows_each_status_and_the_results_pages_score(people, clock):
    teacher, ana, ben, cy, database_url = people
    url, code = create_class(teacher)
    assign(teacher, url, close_at="2026-11-30T17:00", late_penalty=10, attempt_limit=2)
    enrol(teacher, code, database_url, (ana, "ana"), (ben, "ben"), (cy, "cyd"))
    view = assignment_url(teacher, url)
    on_time = finish(ana, clock, first_answer="A")
    cy.start("test-basics")  # begun, not finished
    page = teacher.get(view).text
    statuses = re.findall(r'data-username="(\w+)" data-status="([^"]+)"', page)
    assert statuses == [
        ("ben", "not started"),
        ("cyd", "in progress"),
        ("ana", "submitted on time"),
    ]
    clock.advance(5 * 86400 + 9 * 3600)  # Friday 18:00: an hour late
    late = finish(ben, clock)
    rows = {row["Username"]: row for row in view_rows(teacher, view)}
    assert rows["ana"]["Score"] == on_time and rows["ana"]["Late factor"] == "1"
    assert rows["ben"]["Status"] == "late" and rows["ben"]["Late factor"] == "0.9"
    assert rows["ben"]["Score"] == str(int(late) * 9 // 10)
    assert rows["ana"]["Attempts used"] == "1" and rows["cyd"]["Attempts used"] == "1"
    assert rows["ana"]["Score rule"].startswith("A set's score is its best finished attempt")
    gradebook = teacher.get(f"{url}/gradebook.csv?flavour=moodle").text
    assert {r["username"]: r for r in csv.DictReader(io.StringIO(gradebook))}["ben"][
        "Test basics"
    ] == rows["ben"]["Score"]  # the view, the gradebook and the results page agree
    page = teacher.get(view).text
    ben_link = re.search(r'href="([^"]+/learners/\d+)" data-testid="learner-results">ben<', page)
    assert ben_link, page
    review = teacher.get(ben_link[1]).text  # his results, as the instructor sees them
    assert f'data-testid="attempt-score">{late}%<' in review and "late factor ×0.9" in review
    assert review.count('data-testid="question-row"') == 2
    assert ana.get(ben_link[1]).status_code == 403  # a learner may not look
    clock.advance(4 * 86400)  # after the close
    after = [(row["Username"], row["Status"]) for row in view_rows(teacher, view)]
    assert after == [("cyd", "missing after close"), ("ben", "late"), ("ana", "submitted on time")]
    assert "closed, was due" in cy.get("/me/classes").text


def test_a_topic_assignment_scores_the_mean_of_its_parts_alike_everywhere(people, clock):
    teacher, ana, _ben, _cy, database_url = people
    url, code = create_class(teacher)
    assign(teacher, url, set_id="topic:collectives")
    enrol(teacher, code, database_url, (ana, "ana"))
    basics = int(finish(ana, clock))  # one of the topic's two sets, the other not begun
    expected = f"{basics / 2:g}"
    view = assignment_url(teacher, url)
    (row,) = view_rows(teacher, view)
    assert row["Score"] == expected and row["Status"] == "in progress"
    assert row["Score rule"].startswith(rules.TOPIC_SCORE_WORDS)
    assert rules.TOPIC_SCORE_WORDS in html.unescape(teacher.get(view).text)
    mine = html.unescape(ana.get("/me/classes").text)
    assert f"{basics / 2:.1f}%" in mine and rules.TOPIC_SCORE_WORDS in mine
    assert 'href="/topics/collectives"' in mine
    canvas = list(csv.reader(io.StringIO(teacher.get(f"{url}/gradebook.csv").text)))
    assert canvas[2][5] == expected


def test_an_unknown_topic_or_group_is_a_clear_error(people):
    teacher, *_ = people
    url, _code = create_class(teacher)
    form = {"set_id": "topic:nope", "open_at": "2026-11-22T08:00", "due_at": "2026-11-27T17:00"}
    refused = teacher.post(f"{url}/assignments", form)
    assert refused.status_code == 400 and "No topic 'nope'" in html.unescape(refused.text)
    limited = teacher.post(
        f"{url}/assignments", {**form, "set_id": "topic:collectives", "attempt_limit": 2}
    )
    assert limited.status_code == 400 and "no attempt limit" in limited.text
    assign(teacher, url)
    view = assignment_url(teacher, url)
    missing = teacher.post(f"{view}/group-extensions", {"group_id": 999})
    assert missing.status_code == 404 and "No such group" in missing.text


def test_a_learner_joins_a_group_later_once_however_often_added(people):
    teacher, ana, _ben, _cy, database_url = people
    url, code = create_class(teacher)
    group = make_group(teacher, url, "lab section B")
    enrol(teacher, code, database_url, (ana, "ana"))
    for _ in range(2):
        added = teacher.post(
            f"{url}/groups/{group}/members",
            {"user_id": user_id(database_url, "ana")},
            follow_redirects=False,
        )
        assert added.status_code == 303, added.text
    listed = re.search(
        r'data-group-name="lab section B"><strong>[^<]+</strong>: ([^<\n]*)', teacher.get(url).text
    )
    assert listed and listed[1].strip() == "ana"


def test_a_learner_of_the_class_is_refused_every_page_and_form_of_its_groups_and_assignments(
    people,
):
    teacher, ana, _ben, _cy, database_url = people
    url, code = create_class(teacher)
    enrol(teacher, code, database_url, (ana, "ana"))
    assign(teacher, url)
    view = assignment_url(teacher, url)
    group = make_group(teacher, url, "lab B", user_id(database_url, "ana"))
    ana_id = user_id(database_url, "ana")
    for page in (view, f"{view}/view.csv", f"{view}/learners/{ana_id}"):
        assert ana.get(page).status_code == 403, page
    forms = {
        f"{url}/groups": {"name": "mine", "user_id": [ana_id]},
        f"{url}/groups/{group}/members": {"user_id": [ana_id]},
        f"{view}/group-extensions": {"group_id": group, "time_multiplier": "2"},
    }
    for action, form in forms.items():
        assert ana.post(action, form, follow_redirects=False).status_code == 403, action

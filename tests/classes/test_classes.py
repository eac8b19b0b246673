"""Classes over HTTP: create, join by code (a guest keeps progress), roster CSV, assignment
windows and attempt limits at start, extensions, and the gradebook CSV (SQLite and PostgreSQL)."""

from __future__ import annotations

import csv
import io
import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.accounts.models import Role, TimeAccommodation, User
from app.db import make_engine
from tests.support.accounts import sign_up, user_id
from tests.support.learner import Learner


@pytest.fixture
def people(app_factory, database_url):
    app = app_factory(database_url)
    with TestClient(app) as one, TestClient(app) as two, TestClient(app) as three:
        teacher, ana, ben = Learner(one), Learner(two), Learner(three)
        sign_up(teacher, "teach", database_url, Role.INSTRUCTOR)
        yield teacher, ana, ben, app, database_url


def create_class(teacher: Learner) -> tuple[str, str]:
    """Create a class; return its page's URL and join code."""
    response = teacher.post("/staff/classes", {"title": "CS 249"}, follow_redirects=False)
    assert response.status_code == 303
    url = response.headers["location"]
    match = re.search(r'data-testid="join-code">([A-Z0-9]+)<', teacher.get(url).text)
    assert match
    return url, match[1]


def assign(teacher: Learner, url: str, **fields: object) -> None:
    form = {"set_id": "test-basics", "open_at": "2026-11-22T08:00", "due_at": "2026-11-27T17:00"}
    form.update({key: str(value) for key, value in fields.items()})
    response = teacher.post(f"{url}/assignments", form, follow_redirects=False)
    assert response.status_code == 303, response.text


def finish(person: Learner, clock, first_answer: str = "B") -> str:
    """Take test-basics to its results page; return the score it shows."""
    attempt = person.start("test-basics")
    person.answer(attempt, 1, first_answer)
    if first_answer != "B":
        person.answer(attempt, 1, "B")
    person.next(attempt)
    person.answer(attempt, 2, "3.33")
    person.next(attempt)
    results = person.get(f"{attempt}/results").text
    match = re.search(r"score (\d+)%", results)
    assert match, results
    return match[1]


def join(person: Learner, code: str) -> None:
    response = person.post("/join", {"code": code.lower()}, follow_redirects=False)
    assert response.status_code == 303, response.text


def test_a_guest_who_joins_then_signs_up_keeps_the_class_and_their_progress(people, clock):
    teacher, ana, _ben, _app, database_url = people
    url, code = create_class(teacher)
    ana.start_as_guest()
    join(ana, code)
    join(ana, code)  # joining twice is harmless
    attempt = ana.start("test-basics")
    sign_up(ana, "ana", database_url)
    assert ana.get("/me/classes").status_code == 200 and "CS 249" in ana.get("/me/classes").text
    assert ana.start("test-basics") == attempt  # the same unfinished attempt: progress kept
    page = teacher.get(url).text
    assert page.count('data-testid="member-row"') == 2 and 'data-username="ana"' in page


def test_a_wrong_code_is_a_clear_404(people):
    _teacher, ana, *_ = people
    ana.start_as_guest()
    response = ana.post("/join", {"code": "NOPE1234"})
    assert response.status_code == 404 and "No class has that code" in response.text


def test_a_roster_adds_accounts_with_a_first_password_and_a_bad_row_adds_nobody(people):
    teacher, _ana, ben, *_ = people
    url, _code = create_class(teacher)
    bad = "email,student id,name\nben@uni.edu,S2,Ben\nnot-an-email,S3,Cy\n"
    response = teacher.client.post(
        f"{url}/roster",
        data={"csrf_token": teacher.csrf},
        files={"roster": ("roster.csv", bad.encode(), "text/csv")},
    )
    assert response.status_code == 400 and "line 3:" in response.text
    assert 'data-username="ben"' not in teacher.get(url).text  # nothing half done
    good = "\ufeffemail,student id,name\nben@uni.edu,S2,Ben\n"  # Excel's byte-order mark
    response = teacher.client.post(
        f"{url}/roster",
        data={"csrf_token": teacher.csrf},
        files={"roster": ("roster.csv", good.encode(), "text/csv")},
    )
    assert response.status_code == 200, response.text
    password = re.search(r'data-testid="first-password">([^<]+)<', response.text)
    assert password
    ben.get("/login")
    signed_in = ben.post("/login", {"username": "ben", "password": password[1]})
    assert signed_in.status_code == 200 and "CS 249" in ben.get("/me/classes").text


def test_an_assignment_is_due_friday_and_refuses_starts_outside_its_window_and_limit(people, clock):
    teacher, ana, _ben, _app, database_url = people
    url, code = create_class(teacher)
    assign(teacher, url, open_at="2026-11-22T10:00", attempt_limit=1)
    sign_up(ana, "ana", database_url)
    join(ana, code)
    assert 'href="/me/classes"' in ana.get("/me/progress").text
    assert "due Friday 17:00" in ana.get("/me/classes").text
    refused = ana.post("/sets/test-basics/start", follow_redirects=False)
    assert refused.status_code == 409 and "opens on" in refused.text
    clock.advance(3600)
    finish(ana, clock)
    again = ana.post("/sets/test-basics/start", follow_redirects=False)
    assert again.status_code == 409 and "all 1 attempts" in again.text


def test_an_extension_moves_one_learners_close_date_and_multiplies_their_time(people, clock):
    teacher, ana, ben, _app, database_url = people
    url, code = create_class(teacher)
    assign(teacher, url)
    for person, name in ((ana, "ana"), (ben, "ben")):
        sign_up(person, name, database_url)
        join(person, code)
    assignment_id = re.search(r"/assignments/(\d+)/extensions", teacher.get(url).text)
    assert assignment_id
    granted = teacher.post(
        f"{url}/assignments/{assignment_id[1]}/extensions",
        {
            "user_id": user_id(database_url, "ana"),
            "time_multiplier": "2",
            "due_at": "2026-11-30T17:00",
        },
        follow_redirects=False,
    )
    assert granted.status_code == 303, granted.text
    clock.advance(6 * 86400)  # Saturday: past the class's due (and close) date
    assert ben.post("/sets/test-basics/start", follow_redirects=False).status_code == 409
    attempt = ana.start("test-basics")
    assert ana.get(f"/api{attempt}/q/1").json()["seconds_left"] == 120  # 60 s × 2


def test_the_gradebook_carries_the_results_pages_scores_with_the_late_rule(people, clock):
    teacher, ana, ben, _app, database_url = people
    url, code = create_class(teacher)
    assign(teacher, url, close_at="2026-11-30T17:00", late_penalty=10)
    for person, name in ((ana, "ana"), (ben, "ben")):
        sign_up(person, name, database_url)
        join(person, code)
    on_time = finish(ana, clock, first_answer="A")  # a second try: less than 100
    clock.advance(5 * 86400 + 9 * 3600)  # Friday 18:00: an hour late, one day's penalty
    late = finish(ben, clock)
    canvas = list(csv.reader(io.StringIO(teacher.get(f"{url}/gradebook.csv?flavour=canvas").text)))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert re.fullmatch(r"Test basics \(\d+\)", canvas[0][5]) and canvas[1][0] == "Points Possible"
    scores = {row[3]: row[5] for row in canvas[2:]}
    assert scores == {"ana": on_time, "ben": str(int(late) * 9 // 10)}
    moodle = list(csv.reader(io.StringIO(teacher.get(f"{url}/gradebook.csv?flavour=moodle").text)))
    assert moodle[0][:3] == ["email", "idnumber", "username"]
    assert {row[2]: row[3] for row in moodle[1:]} == scores
    assert teacher.get(f"{url}/gradebook.csv?flavour=excel").status_code == 400


def test_a_learner_may_not_manage_a_class(people):
    teacher, ana, _ben, _app, database_url = people
    url, _code = create_class(teacher)
    sign_up(ana, "ana", database_url)
    assert ana.get(url).status_code == 403
    assert ana.get(f"{url}/gradebook.csv").status_code == 403


def test_an_extension_of_dates_only_keeps_the_accounts_time_accommodation(people, clock):
    teacher, ana, _ben, _app, database_url = people
    url, code = create_class(teacher)
    assign(teacher, url)
    sign_up(ana, "ana", database_url)
    join(ana, code)
    ana_id = user_id(database_url, "ana")
    set_accommodation(database_url, ana_id, TimeAccommodation.EXTENDED_2)
    assignment_id = re.search(r"/assignments/(\d+)/extensions", teacher.get(url).text)
    assert assignment_id
    dates_only = {"user_id": ana_id, "due_at": "2026-11-30T17:00"}  # the form's "Time ×" is 1
    teacher.post(f"{url}/assignments/{assignment_id[1]}/extensions", dates_only)
    attempt = ana.start("test-basics")
    assert ana.get(f"/api{attempt}/q/1").json()["seconds_left"] == 120  # still 60 s × 2


def set_accommodation(database_url: str, user: int, accommodation: TimeAccommodation) -> None:
    engine = make_engine(database_url)
    with Session(engine) as session:
        person = session.get(User, user)
        assert person is not None
        person.time_accommodation = accommodation
        session.add(person)
        session.commit()
    engine.dispose()


def test_the_class_page_is_titled_by_the_class_alone(people):
    teacher, *_rest = people
    url, _code = create_class(teacher)
    title = re.search(r"<title>(.*?)</title>", teacher.get(url).text, re.S)
    assert title is not None and "CS 249" in title[1]
    assert "<" not in title[1] and "Groups" not in title[1], title[1]  # no page inside the title

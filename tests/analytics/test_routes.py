"""The admin pages and CSV exports over HTTP: admins only, and the numbers worked out by hand."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.analytics import dataset
from tests.support.accounts import set_role
from tests.support.learner import Learner

ROUTES = [
    "/admin",
    "/admin/sets/test-analysis",
    "/admin/misconceptions",
    "/admin/learners",
    "/admin/learners/1",
    "/admin/export/attempts.csv",
    "/admin/export/items.csv",
]


@pytest.fixture
def admin(app_factory, database_url: str, clock):
    """An admin signed in on an app whose database holds the fixture dataset."""
    dataset.build(database_url, clock)
    with TestClient(app_factory(database_url, challenges_dir=dataset.FIXTURES)) as client:
        person = Learner(client)
        person.get("/")
        person.post("/register", {"username": "root", "password": "administers"})
        set_role(database_url, "root", Role.ADMIN)
        yield person


@pytest.mark.parametrize("url", ROUTES)
def test_learners_are_refused_and_visitors_are_sent_to_log_in(app_factory, sqlite_url, url):
    with TestClient(app_factory(sqlite_url, challenges_dir=dataset.FIXTURES)) as client:
        visitor = client.get(url, follow_redirects=False)
        assert visitor.status_code == 303
        assert visitor.headers["location"] == f"/login?next={url}"
        learner = Learner(client)
        learner.get("/")
        learner.post("/register", {"username": "lena", "password": "learns-a-lot"})
        refused = learner.get(url)
        assert refused.status_code == 403
        assert "This page is for admins." in refused.text
        assert "nav-admin" not in learner.get("/").text
        set_role(sqlite_url, "lena", Role.INSTRUCTOR)
        assert learner.get(url).status_code == 403  # instructors are not admins either


@pytest.mark.parametrize("url", ROUTES)
def test_an_admin_opens_every_page(admin, url):
    assert admin.get(url).status_code == 200


def test_the_admin_link_is_in_the_header_for_admins(admin):
    assert 'href="/admin" data-testid="nav-admin"' in admin.get("/").text


def cells(html: str, item: str) -> dict[str, str]:
    row = re.search(rf'<tr data-item="{item}">(.*?)</tr>', html, re.S)
    assert row is not None
    found = re.findall(r'<td data-testid="([a-z-]+)">(.*?)</td>', row[1], re.S)
    return {name: " ".join(re.sub(r"<[^>]+>", "", value).split()) for name, value in found}


def test_the_set_page_shows_the_hand_computed_statistics(admin):
    page = admin.get("/admin/sets/test-analysis").text
    assert "Statistics count finished attempts only" in page
    assert cells(page, "q1") == {
        "attempts": "5",
        "facility": "80.0",
        "first-try": "80.0",
        "discrimination": "0.0",
        "mean-time": "30.0",
        "timeouts": "0",
        "hints": "2",
        "options": "A ✓: 4 · B: 1 · C: 0",
    }
    q2 = cells(page, "q2")
    assert (q2["facility"], q2["discrimination"], q2["mean-time"]) == ("53.3", "-32.7", "32.0")
    assert q2["options"] == "A ✓: 5 · B: 2 · C ✓: 3 · D: 0"
    assert q2["first-try"] == "40.0"  # bob's right answer came at his second try
    q3 = cells(page, "q3")
    assert (q3["facility"], q3["discrimination"], q3["timeouts"]) == ("40.0", "16.7", "2")
    assert q3["hints"] == "no hint"  # q3 has none to show
    assert q3["options"] == "4.0 ✓: 2 · 5.0: 1"  # a value the numeric key accepts is marked


def chart(page: str, chart_id: str) -> dict:
    blob = re.search(rf'<script type="application/json" id="{chart_id}-data">(.*?)</script>', page)
    assert blob is not None
    return json.loads(blob[1])


def test_each_chart_carries_the_numbers_of_its_table(admin):
    page = admin.get("/admin/sets/test-analysis").text
    indices = chart(page, "chart-indices")
    assert indices["labels"] == ["q1", "q2", "q3"]
    assert [d["data"] for d in indices["datasets"]] == [[80.0, 53.3, 40.0], [0.0, -32.7, 16.7]]
    assert chart(page, "chart-time")["datasets"][0]["data"] == [30.0, 32.0, 22.0]
    overview = admin.get("/admin").text
    daily = chart(overview, "chart-daily")
    assert daily["labels"] == ["2026-11-22", "2026-11-23", "2026-11-24"]
    assert [d["data"] for d in daily["datasets"]] == [[3, 0, 3], [3, 0, 2], [1, 0, 0]]
    assert chart(overview, "chart-sets")["datasets"][0]["data"] == [57.8]


def test_the_overview_counts_learners_attempts_completions_and_badges(admin):
    page = admin.get("/admin").text
    found = dict(re.findall(r'data-testid="total-([a-z]+)">(\d+)<', page))
    assert found == {"learners": "6", "attempts": "6", "completions": "5", "badges": "1"}
    assert '<th scope="row">2026-11-23</th><td>0</td><td>0</td><td>0</td>' in page


def test_a_learner_s_page_shows_their_progress(admin):
    page = admin.get("/admin/learners/1").text
    assert "ada" in page and "3/3" in page and "0:40" in page  # time used: 40 seconds
    listing = admin.get("/admin/learners").text
    assert '<a href="/admin/learners/6">fay</a>' in listing
    assert admin.get("/admin/learners/999").status_code == 404
    assert admin.get("/admin/sets/no-such-set").status_code == 404


def read_csv(response) -> list[list[str]]:
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(response.text)))


def test_the_attempts_csv_has_one_row_per_attempt(admin):
    response = admin.get("/admin/export/attempts.csv")
    assert response.headers["content-disposition"] == 'attachment; filename="attempts.csv"'
    on = "test-analysis,Item analysis"
    day1, day3 = "2026-11-22T09:", "2026-11-24T09:"
    expected = [
        "attempt_id,user_id,username,set_id,set_title,started_at,finished_at,items,correct,"
        "score_percent,badge_earned,first_try",
        f"1,1,ada,{on},{day1}00:00+00:00,{day1}00:40+00:00,3,3,100,true,3",
        f"2,2,bob,{on},{day1}01:40+00:00,{day1}03:10+00:00,3,2,56,false,1",  # q2 at try 2
        f"3,3,cy,{on},{day1}04:10+00:00,{day1}05:40+00:00,3,2,67,false,2",
        f"4,4,dee,{on},{day3}00:00+00:00,{day3}01:10+00:00,3,1,33,false,1",
        f"5,5,eve,{on},{day3}02:10+00:00,{day3}05:50+00:00,3,1,33,false,1",
        f"6,6,fay,{on},{day3}06:50+00:00,,3,,,false,",  # unfinished: no end, no score
    ]
    assert read_csv(response) == [line.split(",") for line in expected]


def test_the_items_csv_has_the_hand_computed_statistics(admin):
    response = admin.get("/admin/export/items.csv")
    assert response.headers["content-disposition"] == 'attachment; filename="items.csv"'
    expected = [
        "set_id,content_version,item_id,item_title,kind,finished_attempts,facility_index,"
        "first_try_facility,discrimination_index,mean_seconds,timeouts,hints_shown,option_counts",
        # The dataset's attempts started before versions (no version); * marks the key.
        "test-analysis,,q1,One answer,choice,5,80.0,80.0,0.0,30.0,0,2,A*=4;B=1;C=0",
        "test-analysis,,q2,Two answers,choice,5,53.3,40.0,-32.7,32.0,1,1,A*=5;B=2;C*=3;D=0",
        "test-analysis,,q3,A number,numeric,5,40.0,40.0,16.7,22.0,2,0,4.0*=2;5.0=1",
    ]
    assert read_csv(response) == [line.split(",") for line in expected]
    assert response.text.endswith("\r\n")  # RFC 4180 line endings


def test_a_cell_that_a_spreadsheet_would_run_as_a_formula_is_defused():
    from app.analytics.routes import spreadsheet_text

    assert spreadsheet_text("=HYPERLINK()") == "'=HYPERLINK()"
    assert (
        spreadsheet_text("-rank") == "'-rank"
        and spreadsheet_text("rank-0") == "rank-0"
        and spreadsheet_text(None) == ""
    )

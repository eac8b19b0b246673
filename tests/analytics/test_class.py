"""A simulated class over HTTP: every dashboard and CSV number is what the learners' own results
pages showed, and item statistics are kept apart per content version (the key changes between)."""

from __future__ import annotations

import csv
import io
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.accounts.models import Role
from app.attempts.models import SetAttempt
from app.db import make_engine
from tests.conftest import TEST_CHALLENGES
from tests.support.accounts import sign_up
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

SET_ID = "test-basics"  # q1 world-size (choice, key B), q2 speedup (numeric, 3.333 ± 0.05)
TITLES = {"World size": "world-size", "Speed-up": "speedup"}


@dataclass(frozen=True)
class Results:
    """What one learner's results page showed."""

    attempt_id: int
    name: str  # the username, or "" for a guest
    correct: int
    first_try: int
    percent: int
    credits: dict[str, float]  # per item, from the result and tries the page lists


def results_page(learner: Learner, attempt: str, name: str) -> Results:
    """Read the learner's own results page the way they read it."""
    page = learner.get(f"{attempt}/results").text
    shown = re.search(r"(\d+) / \d+ correct, .*?(\d+) at the first try</span> · score (\d+)%", page)
    assert shown is not None, page
    credits = {}
    for status, title, tries in re.findall(
        r'<tr data-status="([a-z_]+)">\s*<td>\d+</td>\s*<td><a [^>]*>([^<]+)</a></td>'
        r".*?<td>(\d+)/\d+",
        page,
        re.S,
    ):
        # In the page's own words: a second try still scores two thirds (each costs a third).
        credits[TITLES[title]] = 1 - (int(tries) - 1) / 3 if status == "correct" else 0.0
    assert len(credits) == 2
    correct, first_try, percent = (int(value) for value in shown.groups())
    return Results(int(attempt.rsplit("/", 1)[1]), name, correct, first_try, percent, credits)


def take(learner: Learner, clock, q1: list[str], q2: list[str] | None) -> str:
    """Take the set: the answers tried on each question (q2 None: let its time run out)."""
    attempt = learner.start(SET_ID)
    for answer in q1:
        assert learner.answer(attempt, 1, answer).status_code == 303
    assert learner.next(attempt).status_code == 303
    if q2 is None:
        clock.advance(600)  # past any limit and grace: the next look records the time-out
        learner.get(f"{attempt}/q/2")
    for answer in q2 or []:
        assert learner.answer(attempt, 2, answer).status_code == 303
    assert learner.next(attempt).headers["location"] == f"{attempt}/results"
    return attempt


# (username or None for a guest, tries at q1, tries at q2 or None for a time-out)
BEFORE = [
    ("ana", ["B"], ["3.33"]),  # all first try: 100 %, the badge
    (None, ["A", "B"], ["3.33"]),  # q1 at the second try: (⅔ + 1) / 2 = 83 %
    ("ben", ["C", "A"], ["4", "3.3"]),  # q1 wrong, q2 at the second try: 33 %
    (None, ["B"], None),  # q2 timed out: 50 %
]
AFTER = [  # under the new key for q2 (4.0): 3.33 is now wrong
    ("cara", ["B"], ["3.33", "4"]),  # 83 %
    (None, ["A", "C"], ["4"]),  # 50 %
]


def cells(row_html: str) -> dict[str, str]:
    found = re.findall(r'<td data-testid="([a-z-]+)"[^>]*>(.*?)</td>', row_html, re.S)
    return {name: " ".join(re.sub(r"<[^>]+>", "", value).split()) for name, value in found}


def one_decimal(value: float) -> str:
    return f"{value:.1f}"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    return target


def test_every_dashboard_and_csv_number_is_what_the_learners_results_pages_showed(
    app_factory, database_url, folder, clock
):
    app = app_factory(database_url, executor=FakeExecutor(), challenges_dir=folder)
    seen: dict[str, list[Results]] = {"before": [], "after": []}
    with TestClient(app) as client:
        for phase, script in (("before", BEFORE), ("after", AFTER)):
            if phase == "after":  # an instructor changes q2's key; the reload publishes it
                set_file = folder / "basics" / "set.yaml"
                set_file.write_text(set_file.read_text().replace("answer: 3.333", "answer: 4.0"))
                client.cookies.clear()
                sign_up(teacher := Learner(client), "teacher", database_url, Role.INSTRUCTOR)
                assert teacher.post("/staff/content/reload").status_code == 200
            for name, q1, q2 in script:
                client.cookies.clear()  # a new browser: a new learner
                learner = Learner(client)
                if name is None:
                    learner.start_as_guest()
                else:
                    sign_up(learner, name, database_url)
                attempt = take(learner, clock, q1, q2)
                seen[phase].append(results_page(learner, attempt, name or ""))
        client.cookies.clear()
        unfinished = Learner(client)
        sign_up(unfinished, "dan", database_url)
        unfinished.answer(unfinished.start(SET_ID), 1, "B")  # never finished: counted nowhere
        client.cookies.clear()
        admin = Learner(client)
        sign_up(admin, "root", database_url, Role.ADMIN)
        pages = {
            "overview": admin.get("/admin").text,
            "set": admin.get(f"/admin/sets/{SET_ID}").text,
            "learners": admin.get("/admin/learners").text,
            "attempts": admin.get("/admin/export/attempts.csv").text,
            "items": admin.get("/admin/export/items.csv").text,
        }
        learner_pages = {
            result.attempt_id: admin.get(f"/admin/learners/{user}").text
            for result in seen["before"] + seen["after"]
            if (user := _owner(database_url, result.attempt_id)) is not None
        }

    everyone = seen["before"] + seen["after"]
    # What the learners saw, as scripted (so the comparison below compares something real).
    assert [r.percent for r in everyone] == [100, 83, 33, 50, 83, 50]
    mean = sum(r.percent for r in everyone) / len(everyone)

    # The overview's set row and the set page's summary: the mean of the results pages' scores.
    row = re.search(rf'<tr data-set="{SET_ID}">(.*?)</tr>', pages["overview"], re.S)
    assert row is not None
    overview = cells(row[1])
    assert (overview["attempts"], overview["completions"]) == ("7", "6")
    assert overview["mean-score"] == one_decimal(mean)
    assert overview["badge-rate"] == one_decimal(100 * 1 / 6)  # ana's badge only
    summary = re.search(r'data-testid="set-mean-score"[^>]*>([^<]+)<', pages["set"])
    assert summary is not None and summary[1] == f"{one_decimal(mean)} %"

    # Each learner's row on the learners page and their own page: their results page's score.
    for result in everyone:
        page = learner_pages[result.attempt_id]
        attempt_row = re.search(rf'<tr data-attempt="{result.attempt_id}">(.*?)</tr>', page, re.S)
        assert attempt_row is not None
        assert cells(attempt_row[1])["attempt-score"] == str(result.percent)
        assert f"{result.correct}/2" in attempt_row[1]
    for result in everyone:
        if result.name:
            listed = re.search(rf">{result.name}</a>.*?</tr>", pages["learners"], re.S)
            assert listed is not None
            assert cells(listed[0])["mean-score"] == one_decimal(result.percent)

    # The attempts CSV: every finished attempt's numbers are its results page's; guests have a
    # stable label, never an empty name.
    rows = {int(r["attempt_id"]): r for r in csv.DictReader(io.StringIO(pages["attempts"]))}
    for result in everyone:
        exported = rows[result.attempt_id]
        assert exported["score_percent"] == str(result.percent)
        assert exported["correct"] == str(result.correct)
        assert exported["first_try"] == str(result.first_try)
        expected_name = result.name or f"guest-{exported['user_id']}"
        assert exported["username"] == expected_name
    assert all(r["username"] for r in rows.values())
    [open_row] = [r for r in rows.values() if not r["finished_at"]]
    assert (open_row["username"], open_row["score_percent"]) == ("dan", "")

    # Item statistics, per content version: the facility is the mean of the items' credits as
    # the results pages list them; the two versions are not pooled.
    items = [r for r in csv.DictReader(io.StringIO(pages["items"])) if r["set_id"] == SET_ID]
    versions = {r["content_version"] for r in items}
    assert len(versions) == 2 and "" not in versions
    by_version: dict[str, dict[str, dict[str, str]]] = {}
    for r in items:
        by_version.setdefault(r["content_version"], {})[r["item_id"]] = r
    newest, older = _order(pages["set"])
    for version, group in ((older, seen["before"]), (newest, seen["after"])):
        for item_id in ("world-size", "speedup"):
            exported = by_version[version][item_id]
            credits = [r.credits[item_id] for r in group]
            assert exported["finished_attempts"] == str(len(group))
            assert exported["facility_index"] == one_decimal(100 * sum(credits) / len(credits))
            first = sum(credit == 1.0 for credit in credits)
            assert exported["first_try_facility"] == one_decimal(100 * first / len(group))
            html = _row(pages["set"], version, item_id)
            assert html["facility"] == exported["facility_index"]
            assert html["attempts"] == exported["finished_attempts"]
    # 3.33 was right under the old key and wrong under the new; each version marks its own key.
    assert by_version[older]["speedup"]["option_counts"] == "3.33*=2;4.0=1;3.3*=1"
    assert by_version[newest]["speedup"]["option_counts"] == "3.33=1;4.0*=2"
    assert "3.33 ✓: 2" in _row(pages["set"], older, "speedup")["options"]
    assert "3.33: 1" in _row(pages["set"], newest, "speedup")["options"]


def _owner(database_url: str, attempt_id: int) -> int | None:
    """The user who took an attempt (the admin opens that learner's page)."""
    engine = make_engine(database_url)
    with Session(engine) as session:
        attempt = session.get(SetAttempt, attempt_id)
        owner = attempt.user_id if attempt else None
    engine.dispose()
    return owner


def _order(page: str) -> list[str]:
    """The content versions in the order the set page groups them (served first)."""
    return re.findall(r'<tbody data-version="([0-9a-f]+)">', page)


def _row(page: str, version: str, item_id: str) -> dict[str, str]:
    group = re.search(rf'<tbody data-version="{version}">(.*?)</tbody>', page, re.S)
    assert group is not None
    row = re.search(rf'<tr data-item="{item_id}">(.*?)</tr>', group[1], re.S)
    assert row is not None
    return cells(row[1])

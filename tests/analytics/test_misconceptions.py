"""The misconception dashboard from a simulated class: test_class.py's learners take the set (its
key changing between two content versions) and every count is what their first picks were."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.analytics.test_class import AFTER, BEFORE, SET_ID, cells, take
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.accounts import sign_up
from tests.support.content import with_misconceptions
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

GPUS, RANK = "world-size-counts-gpus", "world-size-is-rank"  # world-size's A and C


def rows_of(page: str) -> dict[str, dict[str, str]]:
    """The misconception table's rows by id, cell by cell."""
    table = re.search(r'<table data-testid="table-misconceptions">(.*?)</table>', page, re.S)
    assert table is not None, page
    found = re.findall(r'<tr data-misconception="([a-z-]+)">(.*?)</tr>', table[1], re.S)
    return {name: cells(html) for name, html in found}


def test_the_dashboard_counts_each_misconception_picked_first_by_a_simulated_class(
    app_factory, database_url, tmp_path: Path, clock
):
    folder = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, folder)
    set_file = with_misconceptions(folder, FIXTURES)
    app = app_factory(database_url, executor=FakeExecutor(), challenges_dir=folder)
    result_pages = []
    with TestClient(app) as client:
        for phase, script in (("before", BEFORE), ("after", AFTER)):
            if phase == "after":  # a new content version: the tags go on with it
                set_file.write_text(set_file.read_text().replace("answer: 3.333", "answer: 4.0"))
                client.cookies.clear()
                sign_up(teacher := Learner(client), "teacher", database_url, Role.INSTRUCTOR)
                assert teacher.post("/staff/content/reload").status_code == 200
            for name, q1, q2 in script:
                client.cookies.clear()
                learner = Learner(client)
                if name is None:
                    learner.start_as_guest()
                else:
                    sign_up(learner, name, database_url)
                attempt = take(learner, clock, q1, q2)
                result_pages.append(learner.get(f"{attempt}/results").text)
        client.cookies.clear()
        unfinished = Learner(client)
        sign_up(unfinished, "dan", database_url)
        unfinished.answer(unfinished.start(SET_ID), 1, "A")  # never finished: counted nowhere
        client.cookies.clear()
        admin = Learner(client)
        sign_up(admin, "root", database_url, Role.ADMIN)
        set_page = admin.get(f"/admin/sets/{SET_ID}").text
        course_page = admin.get("/admin/misconceptions")
        assert course_page.status_code == 200

    # The class's first picks at world-size, as scripted: B, A, C, B, then B, A (six finished).
    firsts = [q1[0] for _, q1, _ in BEFORE + AFTER]
    assert firsts == ["B", "A", "C", "B", "B", "A"]
    # Later tries do not count: ben's second pick (A) and the guest's (C) are not first picks.
    expected = {
        GPUS: ("2", "6", "33.3"),
        RANK: ("1", "6", "16.7"),
    }
    for page in (set_page, course_page.text):
        rows = rows_of(page)
        assert list(rows) == [GPUS, RANK]  # most picked first
        for name, (picked, picks, share) in expected.items():
            row = rows[name]
            assert (row["picked-first"], row["first-picks"], row["share"]) == (picked, picks, share)
            assert "world-size" in row["items"] and "World size" in row["items"]
        assert "The world size is the number of GPUs on the machine." in page
    assert f'href="/admin/sets/{SET_ID}"' in course_page.text  # the course page names the set

    # The learners whose first pick was a distractor read which belief it showed, and where it
    # is corrected; the others read nothing of it.
    shown = [re.findall(r'<li data-misconception="([a-z-]+)">', page) for page in result_pages]
    assert shown == [[], [GPUS], [RANK], [], [], [GPUS]]
    assert 'href="/topics/lesson-drill/lesson#section-typed"' in result_pages[1]

"""Lesson check picks on the misconception dashboards: a simulated class answers a lesson's check
over HTTP; each learner's first answer to each question counts (course-wide and per class), a
later try does not, and a learner's feedback names the belief a wrong pick shows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.analytics.test_misconceptions import rows_of
from tests.classes.test_classes import create_class, join
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.accounts import sign_up
from tests.support.content import edit, with_misconceptions
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

LESSON = "/topics/lesson-drill/lesson"
# The beliefs of where-sum's and who-calls' wrong option (B).
RETURNS, RANK_ZERO = "all-reduce-returns-the-sum", "only-rank-zero-calls"
BELIEFS = f"""\
  - id: {RETURNS}
    belief: all_reduce returns the sum and leaves the tensor passed as it was.
    corrected_by: {{topic: lesson-drill, section: chosen}}
  - id: {RANK_ZERO}
    belief: Only rank 0 needs to call a collective.
    corrected_by: {{topic: lesson-drill, section: stopped}}
"""
# Each learner's tries at the check (where-sum, who-calls); A is right for both.
TRIES = {
    "ana": [("B", "B"), ("A", "A")],
    "ben": [("A", "B"), ("A", "A")],
    "dee": [("A", "A")],
    "cal": [("B", "B"), ("B", "B"), ("A", "A")],  # not in the class; later tries count nowhere
}
IN_CLASS = ("ana", "ben", "dee")


def test_a_class_answering_lesson_checks_shows_real_rows_on_the_dashboards(
    app_factory, database_url, tmp_path: Path
):
    folder = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, folder)
    with_misconceptions(folder, FIXTURES)
    (folder / "misconceptions.yaml").write_text(
        (folder / "misconceptions.yaml").read_text() + BELIEFS
    )
    topic_file = folder / "lesson-drill" / "topic.yaml"
    edit(topic_file, "{id: B, text: In its return value}",
         f"{{id: B, text: In its return value, misconception: {RETURNS}}}")  # fmt: skip
    edit(topic_file, "{id: B, text: Rank 0 only}",
         f"{{id: B, text: Rank 0 only, misconception: {RANK_ZERO}}}")  # fmt: skip
    app = app_factory(database_url, executor=FakeExecutor(), challenges_dir=folder)
    with TestClient(app) as client:
        sign_up(teacher := Learner(client), "teacher", database_url, Role.INSTRUCTOR)
        class_url, code = create_class(teacher)
        feedback = {}
        for name, tries in TRIES.items():
            client.cookies.clear()
            sign_up(learner := Learner(client), name, database_url)
            if name in IN_CLASS:
                join(learner, code)
                refused = learner.get(f"{class_url}/misconceptions")
                assert refused.status_code == 403  # a class's dashboard is for its staff
            for number, (where_sum, who_calls) in enumerate(tries):
                form = {"where-sum": where_sum, "who-calls": who_calls}
                assert learner.post(f"{LESSON}/check", form).status_code == 200
                if number == 0:
                    feedback[name] = learner.get(LESSON).text
        client.cookies.clear()
        sign_up(admin := Learner(client), "root", database_url, Role.ADMIN)
        course_page = admin.get("/admin/misconceptions").text
        client.cookies.clear()
        teacher.get("/login")
        teacher.post("/login", {"username": "teacher", "password": "password-123", "next": "/"})
        class_page = teacher.get(f"{class_url}/misconceptions")
        # Every set the class page links is one its instructor, not an admin, may open.
        set_links = set(re.findall(r'href="(/[a-z/]*sets/[^"]+)"', class_page.text))
        assert set_links and {teacher.get(link).status_code for link in set_links} == {200}

    # First picks, course-wide: where-sum B by ana and cal (2 of 4), who-calls B by ana, ben
    # and cal (3 of 4); cal's and ana's later tries change nothing.
    course = rows_of(course_page)
    assert list(course)[:2] == [RANK_ZERO, RETURNS]  # most picked first
    assert counts(course, RANK_ZERO) == ["3", "4", "75.0"]
    assert counts(course, RETURNS) == ["2", "4", "50.0"]
    assert "lesson check of lesson-drill/who-calls Who calls it" in course[RANK_ZERO]["items"]
    assert "lesson check of lesson-drill/where-sum" in course[RETURNS]["items"]
    # The set's misconceptions are still there, with no first picks yet.
    assert course["world-size-counts-gpus"]["picked-first"] == "0"
    # The class: ana, ben and dee only (cal is not a member).
    assert class_page.status_code == 200, class_page.text
    mine = rows_of(class_page.text)
    assert counts(mine, RANK_ZERO) == ["2", "3", "66.7"]
    assert counts(mine, RETURNS) == ["1", "3", "33.3"]
    # A learner's feedback names the belief their wrong pick shows and links what corrects it.
    named = re.findall(
        r'data-misconception="([a-z-]+)"><strong>Wrong belief:</strong>.*?'
        r'<a href="([^"]+)" data-testid="correction">',
        feedback["ana"],
        re.S,
    )
    assert named == [
        (RETURNS, "/topics/lesson-drill/lesson#section-chosen"),
        (RANK_ZERO, "/topics/lesson-drill/lesson#section-stopped"),
    ]
    assert 'data-testid="pick-misconception"' not in feedback["dee"]  # all right: none shown


def counts(rows: dict[str, dict[str, str]], misconception: str) -> list[str]:
    """A dashboard row's picked-first count, first picks on its items and share."""
    return [rows[misconception][key] for key in ("picked-first", "first-picks", "share")]

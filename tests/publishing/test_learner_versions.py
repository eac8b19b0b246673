"""Practice, explain-it, quick quizzes and lab progress keep the version they started on, as a
timed attempt does: a Reload that publishes a new version changes no open question or step
under a learner (real SQLite/PostgreSQL, the gate as production has it)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.modes.models import ModeAnswer
from tests.conftest import FIXTURES
from tests.modes.test_modes_http import rows, verdict
from tests.publishing.test_gate import prove
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

PRACTICE = "/topics/drill/practice/modes-drill/world-size"
TOPIC_ITEM = "/topics/drill/practice/drill/barrier"
EXPLAIN = "/topics/drill/explain/explain-averaging"
STEP1 = "/labs/hello-ranks/steps/print-rank"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "modes", target / "modes")
    shutil.copytree(FIXTURES / "labs" / "hello", target / "hello")
    prove(target)
    return target


@pytest.fixture
def build(app_factory, database_url, folder) -> Callable[[], FastAPI]:
    def make() -> FastAPI:
        return app_factory(
            database_url, executor=FakeExecutor(), challenges_dir=folder, content_gate="proven"
        )

    return make


@pytest.fixture
def app(build) -> FastAPI:
    return build()


@pytest.fixture
def learner(app) -> Iterator[Learner]:
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        yield person


def publish_edit(staff: Learner, folder: Path, file: str, *edits: tuple[str, str]) -> None:
    """Edit a file, prove the course as it is now and Reload: the edit goes live as v2."""
    path = folder / file
    text = path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)
    prove(folder)
    staff.post("/staff/content/reload")


def shown_version(page: str) -> str:
    found = re.search(r'name="version" value="([0-9a-f]{64})"', page)
    assert found is not None, page
    return found[1]


def newcomer_page(app: FastAPI, url: str) -> str:
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        return person.get(url).text


def test_an_open_practice_question_is_judged_by_the_version_it_was_shown(
    staff, learner, folder, app, database_url
):
    version = shown_version(learner.get(PRACTICE).text)
    publish_edit(
        staff, folder, "modes/set.yaml",
        ("title: World size", "title: Ranks started"), ("    answer: B", "    answer: A"),
    )  # fmt: skip
    assert "Ranks started" in newcomer_page(app, PRACTICE)  # v2 is live
    answered = learner.post(f"{PRACTICE}/answer", {"choice": "B", "version": version})
    assert verdict(answered.text) == "✓ Correct"  # v1's key
    assert "World size" in answered.text and "Ranks started" not in answered.text
    assert [a.correct for a in rows(database_url, ModeAnswer, mode="practice")] == [True]


def test_a_topic_item_and_an_explain_item_keep_the_topic_version_they_were_shown(
    staff, learner, folder, app
):
    item_version = shown_version(learner.get(TOPIC_ITEM).text)
    explain_version = shown_version(learner.get(EXPLAIN).text)
    assert item_version == explain_version  # both are the topic file's
    publish_edit(
        staff, folder, "modes/topic.yaml",
        ("    answer: A\n", "    answer: B\n"),
        ("Averaging keeps every replica's update identical.", "NEW-MODEL-ANSWER"),
    )  # fmt: skip
    answered = learner.post(f"{TOPIC_ITEM}/answer", {"choice": "A", "version": item_version})
    assert verdict(answered.text) == "✓ Correct"
    explained = learner.post(
        f"{EXPLAIN}/answer",
        {"choice": "each rank gets different data", "version": explain_version},
    )
    assert explained.status_code == 200
    assert "replica&#39;s update identical" in explained.text or (
        "replica's update identical" in explained.text
    )
    assert "NEW-MODEL-ANSWER" not in explained.text


def test_a_quiz_under_way_keeps_every_question_of_the_version_it_was_drawn_from(
    staff, learner, folder, database_url
):
    learner.get("/topics/drill/quiz")
    quiz_url = learner.post("/topics/drill/quiz", follow_redirects=False).headers["location"]
    publish_edit(staff, folder, "modes/set.yaml", ("    answer: B", "    answer: A"))
    publish_edit(staff, folder, "modes/topic.yaml", ("    answer: A\n", "    answer: B\n"))
    total = 6
    for number in range(1, total + 1):
        page = learner.get(quiz_url).text
        kind = re.search(r'data-kind="(\w+)"', page)[1]  # type: ignore[index]
        v1_keys = {"flashcard": "knew", "numeric": "1"}
        choice = v1_keys.get(kind) or ("A" if "What a barrier does" in page else "B")
        learner.post(f"{quiz_url}/q/{number}/answer", {"choice": choice})
    assert f'data-testid="quiz-score">{total}/{total}<' in learner.get(quiz_url).text


def test_lab_progress_keeps_the_lab_version_it_started_on(staff, learner, folder, app):
    assert learner.get(STEP1).status_code == 200
    learner.post(f"{STEP1}/draft", {"code": "print('mine')\n"})  # the progress starts on v1
    publish_edit(
        staff, folder, "hello/lab.yaml",
        ("title: Every rank says hello", "title: Every rank greets"),
        ("        answer: 4\n", "        answer: 8\n"),
    )  # fmt: skip
    assert "Every rank greets" in newcomer_page(app, STEP1)  # v2 for a learner starting now
    page = learner.get(STEP1).text
    assert "Every rank says hello" in page and "Every rank greets" not in page
    answered = learner.post(
        f"{STEP1}/questions/world-size-question/answer", {"choice": "4"}, follow_redirects=False
    )
    assert "was=right" in answered.headers["location"]


def held_draft_link(staff: Learner, kind: str, unit_id: str) -> str:
    """The content page's link to preview a held draft of one unit."""
    page = staff.get("/staff/content").text
    found = re.search(rf'href="(/staff/{kind}s/{unit_id}/preview\?version=[0-9a-f]{{64}})"', page)
    assert found is not None, page
    return found[1]


def hold_edit(staff: Learner, folder: Path, file: str, old: str, new: str) -> None:
    """Edit a file without proving it, and Reload: the edit is held as a draft."""
    path = folder / file
    path.write_text(path.read_text().replace(old, new, 1))
    staff.post("/staff/content/reload")


# A named proof the topic's draft adds: something to run, so the gate holds the draft until
# it is proven (a topic with nothing to run is published by validating).
DRAFT_PROOF = """
proofs:
  - id: draft-proof
    code: |
      print("hi")
    launch: {nproc: 1, backend: gloo, timeout_s: 20}
    outcome:
      ranks:
        all: {stdout: "hi\\n"}
"""


def test_staff_preview_a_held_topic_draft_and_a_held_lab_draft(staff, learner, folder):
    topic_file = folder / "modes" / "topic.yaml"
    topic_file.write_text(topic_file.read_text() + DRAFT_PROOF)
    hold_edit(staff, folder, "modes/topic.yaml", "Rank 0, so that", "DRAFT-BACK Rank 0, so that")
    hold_edit(staff, folder, "hello/lab.yaml", "Every rank says hello", "DRAFT-STEP-TITLE")
    topic_draft = held_draft_link(staff, "topic", "drill")
    page = staff.get(topic_draft).text
    assert 'data-testid="draft-banner"' in page and "DRAFT-BACK" in page
    assert "DRAFT-BACK" not in staff.get("/staff/topics/drill/preview").text  # the live one
    lab_draft = held_draft_link(staff, "lab", "hello-ranks")
    page = staff.get(lab_draft).text
    assert 'data-testid="draft-banner"' in page and "DRAFT-STEP-TITLE" in page
    assert f"/staff/labs/hello-ranks/verify?version={lab_draft.rsplit('=', 1)[1]}" in page
    assert "DRAFT-STEP-TITLE" not in staff.get("/staff/labs/hello-ranks/preview").text
    assert "DRAFT-STEP-TITLE" not in learner.get(STEP1).text  # learners see the live one
    assert learner.get(lab_draft, follow_redirects=False).status_code in (303, 403, 404)
    missing = "/staff/labs/hello-ranks/preview?version=" + "0" * 64
    assert staff.get(missing).status_code == 404

"""Instructors: the content page, reloading without a restart, previews and verification."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text as text_sql

from app.accounts.models import Role
from app.db import make_engine
from tests.conftest import TEST_CHALLENGES
from tests.support.accounts import sign_up
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    return target


@pytest.fixture
def executor() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
def instructor(app_factory, sqlite_url, folder, executor):
    with TestClient(app_factory(sqlite_url, executor=executor, challenges_dir=folder)) as client:
        person = Learner(client)
        sign_up(person, "teacher", sqlite_url, Role.INSTRUCTOR)
        yield person


def test_the_content_page_lists_every_file_with_its_errors(instructor, folder):
    (folder / "broken.yaml").write_text("id: broken\ntitle: Broken\ncolour: red\n")
    instructor.post("/staff/content/reload")
    page = instructor.get("/staff/content").text
    assert "challenges/basics/set.yaml" in page and "✓ valid" in page
    assert "challenges/broken.yaml:3:1: unknown field &#39;colour&#39;" in page
    assert "/staff/sets/test-basics/preview" in page


def test_reloading_picks_up_edits_and_keeps_learners_history(instructor, folder, app_factory):
    attempt = instructor.start("test-basics")
    instructor.answer(attempt, 1, "B")
    set_file = folder / "basics" / "set.yaml"
    text = set_file.read_text()
    cut = text.index("  - id: speedup")
    set_file.write_text(text[:cut].replace("title: Test basics", "title: Renamed basics"))
    instructor.post("/staff/content/reload")
    assert "Renamed basics" in instructor.get("/topics/collectives").text
    assert instructor.start("test-basics") == attempt  # same stable id: the attempt resumes
    assert "✓ Correct" in instructor.get(f"{attempt}/q/1").text
    assert "Test basics" in instructor.get("/me/progress").text  # history keeps its title


def test_the_preview_shows_keys_feedback_and_explanations(instructor):
    page = instructor.get("/staff/sets/test-basics/preview").text
    assert "KEY-EXPLANATION-WORLD" in page and "FEEDBACK-A-WORLD" in page
    assert 'data-option="B"' in page and "key-mark" in page
    assert "Key: <strong>3.333</strong>" in page


def finished(instructor: Learner, set_id: str, item_id: str | None = None) -> None:
    """Wait for the verification job the instructor started to finish."""
    job = instructor.client.app.state.verify_jobs.get((set_id, item_id))  # type: ignore[attr-defined]
    assert job is not None and job.wait(10)


def test_verifying_an_item_shows_the_observation_beside_the_key(instructor, executor):
    url = "/staff/sets/test-runs/items/all-reduce/verify"
    started = instructor.post(url, headers={"HX-Request": "true"})
    assert started.status_code == 200 and 'data-testid="verify-progress"' in started.text
    finished(instructor, "test-runs", "all-reduce")
    response = instructor.get(url, headers={"HX-Request": "true"})
    assert 'data-verdict="pass"' in response.text and "✓ proven" in response.text
    assert 'data-testid="observed-rank-1"' in response.text and "1.0" in response.text
    assert 'data-job-state="done"' in response.text and "hx-trigger" not in response.text
    assert [request.use_cache for request in executor.requests] == [False, False, False]


def test_verifying_a_set_with_a_wrong_key_shows_why(instructor, folder):
    set_file = folder / "runs" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("    answer: A", "    answer: B"))
    instructor.post("/staff/content/reload")
    instructor.post("/staff/sets/test-runs/verify", headers={"HX-Request": "true"})
    finished(instructor, "test-runs")
    response = instructor.get("/staff/sets/test-runs/verify", headers={"HX-Request": "true"})
    assert 'data-verdict="fail"' in response.text and 'data-passed="false"' in response.text
    assert "distractor A also matches" in response.text


def test_without_an_executor_the_preview_says_runs_are_unavailable(instructor, executor):
    executor.up = False
    page = instructor.get("/staff/sets/test-runs/preview").text
    assert "Runs are unavailable right now" in page and "verify-set" not in page


def test_a_learner_on_a_question_an_edit_removed_finishes_it_on_their_version(instructor, folder):
    attempt = instructor.start("test-basics")
    instructor.answer(attempt, 1, "B")
    instructor.next(attempt)  # now on the numeric question
    set_file = folder / "basics" / "set.yaml"
    text = set_file.read_text()
    set_file.write_text(text[: text.index("  - id: speedup")])
    instructor.post("/staff/content/reload")
    page = instructor.get(attempt)  # their version still has it: nothing disappears
    assert page.url.path == f"{attempt}/q/2" and "Speed-up" in page.text
    assert instructor.get("/sets/test-basics").text.count("1 questions") == 1  # v2 for new ones


def test_an_attempt_from_before_versions_on_a_removed_question_moves_on(
    instructor, folder, sqlite_url
):
    attempt = instructor.start("test-basics")
    instructor.answer(attempt, 1, "B")
    instructor.next(attempt)  # now on the numeric question
    _remove_the_numeric_question_under_an_unversioned_attempt(instructor, folder, sqlite_url)
    page = instructor.get(attempt)  # resuming skips the removed question
    assert page.url.path == f"{attempt}/results"
    assert "1 / 2 correct" in page.text and "removed from the set" in page.text


def test_next_onto_a_question_an_edit_removed_goes_where_resuming_skips_it(
    instructor, folder, sqlite_url
):
    attempt = instructor.start("test-basics")
    instructor.answer(attempt, 1, "B")
    _remove_the_numeric_question_under_an_unversioned_attempt(instructor, folder, sqlite_url)
    moved = instructor.next(attempt)
    assert moved.status_code == 303 and moved.headers["location"] == attempt  # not to q/2
    page = instructor.get(attempt)
    assert page.url.path == f"{attempt}/results" and "removed from the set" in page.text


def _remove_the_numeric_question_under_an_unversioned_attempt(
    instructor, folder, sqlite_url
) -> None:
    """The attempt started before versions were kept (no version of its own), then an edit
    removed the set's numeric question, and the instructor reloaded."""
    engine = make_engine(sqlite_url)
    with engine.begin() as connection:
        connection.execute(text_sql("UPDATE set_attempt SET content_version = NULL"))
    engine.dispose()
    set_file = folder / "basics" / "set.yaml"
    text = set_file.read_text()
    set_file.write_text(text[: text.index("  - id: speedup")])
    instructor.post("/staff/content/reload")

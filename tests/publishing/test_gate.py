"""The publish gate: versions by content hash, what is held and why, and attempts that keep the
version they started on through reloads, broken files and restarts (real SQLite/PostgreSQL)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.challenges.loader import load_path
from app.verification import proofs
from tests.conftest import TEST_CHALLENGES
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

NEW_SET = """\
id: {set_id}
title: {title}
topic: Collectives
own_topic: true
description: A set written after the course went live.
badge: {{name: Newcomer}}
items:
  - id: first
    kind: choice
    category: Conceptual
    difficulty: beginner
    title: NEW-QUESTION-TITLE
    prompt: Which is a collective?
    explanation: All-reduce is.
    options:
      - {{id: A, text: "`dist.all_reduce`"}}
      - {{id: B, text: "`print`"}}
    answer: A
"""


def prove(folder: Path) -> None:
    """Write the folder's proofs.json as `ranklab verify --proofs` would after every key passed."""
    report = load_path(folder, display_root=folder.parent)
    hashes = proofs.current_hashes(report.sets, report.labs, report.topics)
    found = {key: proofs.Proof("pass", digest) for key, digest in hashes.items()}
    proofs.save(folder / proofs.FILE_NAME, found, "2.13.0+cpu", "gloo")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    prove(target)  # the course as shipped: every key proven
    return target


@pytest.fixture
def executor() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
def build(app_factory, database_url, folder, executor) -> Callable[[], FastAPI]:
    """A new app on the same database and folder, with the gate as production has it."""

    def make() -> FastAPI:
        return app_factory(
            database_url, executor=executor, challenges_dir=folder, content_gate="proven"
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


def content_row(staff: Learner, path: str) -> str:
    """The content page's row of one file (its state, errors, live and held versions)."""
    page = staff.get("/staff/content").text
    found = re.search(rf'data-path="challenges/{re.escape(path)}">(.*?)</tr>', page, re.S)
    assert found is not None, page
    return found[1]


def test_an_id_taken_is_refused_at_the_new_file_and_the_live_set_keeps_serving(
    staff, learner, folder
):
    attempt = learner.start("test-basics")
    new = folder / "aaa-new" / "set.yaml"  # first by path: before the fix, it took the id
    new.parent.mkdir()
    new.write_text(NEW_SET.format(set_id="test-basics", title="Impostor"))
    prove(folder)
    staff.post("/staff/content/reload")
    assert "Test basics" in learner.get("/sets/test-basics").text
    assert "Impostor" not in learner.get("/sets/test-basics").text
    assert "World size" in learner.get(f"{attempt}/q/1").text  # the open question still there
    row = content_row(staff, "aaa-new/set.yaml")
    assert "challenges/aaa-new/set.yaml:1:5: set id &#39;test-basics&#39; is already taken" in row
    assert "challenges/basics/set.yaml holds it and is being served" in row
    assert "✓ valid" in content_row(staff, "basics/set.yaml")


def test_two_new_files_with_one_id_refuse_the_later_by_path(staff, folder):
    for name in ("one", "two"):
        (folder / name).mkdir()
        (folder / name / "set.yaml").write_text(NEW_SET.format(set_id="fresh", title=name))
    prove(folder)
    staff.post("/staff/content/reload")
    assert "✓ valid" in content_row(staff, "one/set.yaml")
    assert "challenges/one/set.yaml holds it too, and comes first by path" in content_row(
        staff, "two/set.yaml"
    )


def draft_of(staff: Learner, path: str) -> str:
    found = re.search(r"preview\?version=([0-9a-f]{64})", content_row(staff, path))
    assert found is not None
    return found[1]


def test_a_wrong_key_is_held_and_learners_are_graded_by_the_live_version(
    staff, learner, folder, app
):
    attempt = learner.start("test-runs")
    set_file = folder / "runs" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("    answer: A", "    answer: B"))
    staff.post("/staff/content/reload")
    row = content_row(staff, "runs/set.yaml")
    assert "v2 held</span>: not yet verified: `all-reduce`" in row and "live: v1" in row
    assert "✓ valid" not in row
    draft = draft_of(staff, "runs/set.yaml")
    assert "Held draft" in staff.get(f"/staff/sets/test-runs/preview?version={draft}").text
    staff.post(f"/staff/sets/test-runs/verify?version={draft}", headers={"HX-Request": "true"})
    job = app.state.verify_jobs.get((f"test-runs@{draft}", None))  # a draft has its own job
    assert job is not None and job.wait(10)
    staff.post("/staff/content/reload")
    row = content_row(staff, "runs/set.yaml")
    assert "v2 held</span>: `all-reduce` fails its Verify" in row
    assert "✓ valid" not in row
    assert (
        "✓ Correct" in learner.answer(attempt, 1, "A").text
        or "✓ Correct" in learner.get(f"{attempt}/q/1").text
    )
    other = learner.start("test-runs")  # the same learner, resumed: still graded by v1
    assert other == attempt


def test_a_verify_that_fails_the_live_version_is_never_shown_as_valid(staff, folder, app):
    set_file = folder / "runs" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("    answer: A", "    answer: B"))
    staff.post("/staff/content/reload")
    draft = draft_of(staff, "runs/set.yaml")
    form = {"kind": "set", "unit_id": "test-runs", "version": draft, "confirm": "yes"}
    staff.post("/staff/content/publish", form)
    staff.post("/staff/sets/test-runs/verify", headers={"HX-Request": "true"})
    job = app.state.verify_jobs.get(("test-runs", None))
    assert job is not None and job.wait(10)
    row = content_row(staff, "runs/set.yaml")
    assert "✓ valid" not in row and "live version fails Verify" in row


def test_a_typo_keeps_the_open_question_answerable_and_resume_working(staff, learner, folder):
    attempt = learner.start("test-basics")
    set_file = folder / "basics" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("    answer: B", "    answer: B\n  oops"))
    staff.post("/staff/content/reload")
    assert learner.get(f"{attempt}/q/1").status_code == 200
    answered = learner.answer(attempt, 1, "B")
    assert answered.status_code in (200, 303)
    assert "✓ Correct" in learner.get(f"{attempt}/q/1").text  # the Submit counted
    assert learner.get("/sets/test-basics").status_code == 200
    progress = learner.get("/me/progress").text
    assert f'href="{attempt}"' in progress
    assert learner.get(attempt).status_code == 200  # Resume
    row = content_row(staff, "basics/set.yaml")
    assert re.search(r"✗ \d+ errors?<", row), row
    assert (
        "held: file error at <code>challenges/basics/set.yaml:26:3</code>; v1 keeps serving" in row
    )


def test_an_attempt_started_on_v1_finishes_on_v1_after_v2_is_published(
    staff, learner, folder, app, database_url
):
    attempt = learner.start("test-basics")
    set_file = folder / "basics" / "set.yaml"
    text = set_file.read_text().replace("title: World size", "title: Ranks in the world")
    set_file.write_text(text.replace("    answer: B", "    answer: C"))
    prove(folder)
    staff.post("/staff/content/reload")
    page = learner.get(f"{attempt}/q/1").text
    assert "World size" in page and "Ranks in the world" not in page
    learner.answer(attempt, 1, "B")  # v1's key
    assert "✓ Correct" in learner.get(f"{attempt}/q/1").text
    with TestClient(app) as client:  # a learner starting now gets v2
        newcomer = Learner(client)
        newcomer.start_as_guest()
        fresh = newcomer.start("test-basics")
        assert "Ranks in the world" in newcomer.get(f"{fresh}/q/1").text
    assert "live: v2" in content_row(staff, "basics/set.yaml")


def test_a_restart_serves_the_attempts_version_and_the_last_live_one(staff, learner, folder, build):
    attempt = learner.start("test-basics")
    set_file = folder / "basics" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("title: World size", "title: Renamed"))
    # Not proven: a restart holds it and serves v1 from the database, to everyone.
    with TestClient(build()) as client:
        again = Learner(client)
        again.client.cookies.update(learner.client.cookies)
        again.csrf = learner.csrf
        page = again.get(f"{attempt}/q/1").text
        assert "World size" in page and "Renamed" not in page
    prove(folder)
    with TestClient(build()) as client:  # proven now: published at start, but not for them
        again = Learner(client)
        again.client.cookies.update(learner.client.cookies)
        assert "World size" in again.get(f"{attempt}/q/1").text
        again.csrf = learner.csrf
        fresh = Learner(client)
        fresh.client.cookies.clear()
        fresh.start_as_guest()
        assert "Renamed" in fresh.get(f"{fresh.start('test-basics')}/q/1").text


def test_a_new_set_with_nothing_to_run_is_published_by_validating(staff, learner, folder):
    (folder / "fresh").mkdir()
    (folder / "fresh" / "set.yaml").write_text(NEW_SET.format(set_id="fresh", title="Fresh"))
    staff.post("/staff/content/reload")
    page = learner.get("/sets/fresh")
    assert page.status_code == 200 and "unproven-mark" not in page.text
    assert "live: v1, proven" in content_row(staff, "fresh/set.yaml")


def test_an_explicit_unproven_publish_shows_the_mark_to_learners(staff, learner, folder):
    runs = folder / "more-runs"
    shutil.copytree(folder / "runs", runs)
    set_file = runs / "set.yaml"
    set_file.write_text(set_file.read_text().replace("id: test-runs", "id: more-runs"))
    # A second question with nothing to run: nothing of it is unproven.
    choice = NEW_SET.split("items:\n", 1)[1].replace("{{", "{").replace("}}", "}")
    set_file.write_text(set_file.read_text() + choice)
    staff.post("/staff/content/reload")
    assert learner.get("/sets/more-runs").status_code == 404  # held: never verified
    row = content_row(staff, "more-runs/set.yaml")
    assert "v1 held</span>: not yet verified: `all-reduce`" in row
    draft = draft_of(staff, "more-runs/set.yaml")
    refused = staff.post(
        "/staff/content/publish",
        {"kind": "set", "unit_id": "more-runs", "version": "0" * 64, "confirm": "yes"},
    )
    assert refused.status_code == 409
    form = {"kind": "set", "unit_id": "more-runs", "version": draft}
    assert staff.client.post("/staff/content/publish", data=form).status_code == 403  # no CSRF
    assert learner.post("/staff/content/publish", form).status_code in (401, 403)  # not staff
    assert learner.get("/sets/more-runs").status_code == 404
    unconfirmed = staff.post("/staff/content/publish", form)
    assert unconfirmed.status_code == 400 and "tick the box" in unconfirmed.text
    assert learner.get("/sets/more-runs").status_code == 404  # nothing published
    assert 'name="confirm" value="yes" required' in row  # the box the form asks to tick
    staff.post("/staff/content/publish", {**form, "confirm": "yes"})
    assert "unproven-mark" in learner.get("/sets/more-runs").text
    attempt = learner.start("more-runs")
    first = learner.get(f"{attempt}/q/1").text
    assert "unproven-mark" in first and "all_reduce" in first  # the unverified key
    learner.answer(attempt, 1, "A")
    learner.answer(attempt, 1, "B")  # out of tries: on to the next question
    learner.next(attempt)
    second = learner.get(f"{attempt}/q/2").text
    assert "NEW-QUESTION-TITLE" in second and "unproven-mark" not in second
    assert "unproven-mark" not in learner.get("/sets/test-runs").text
    assert "unproven</strong>: published by teacher" in content_row(staff, "more-runs/set.yaml")

"""A learner part-way through a lab is told when a newer version of it is live, what changed,
and may move to it (steps that did not change keep what was done, changed steps start over)
or stay on the version they began (real SQLite/PostgreSQL, the gate as production has it)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.labs import service as labs
from app.labs.models import LabRun, LabStepState
from tests.conftest import FIXTURES
from tests.publishing.test_gate import prove
from tests.publishing.test_learner_versions import publish_edit
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

LAB = "/labs/hello-ranks"
STEP1 = f"{LAB}/steps/print-rank"
STEP2_TITLE = ("title: Add the ranks up", "title: Sum the ranks")
STEP1_QUESTION = ("        answer: 4\n", "        answer: 8\n")
PASSED = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "labs" / "hello", target / "hello")
    prove(target)
    return target


@pytest.fixture
def app(app_factory, database_url, folder) -> FastAPI:
    return app_factory(
        database_url, executor=FakeExecutor(), challenges_dir=folder, content_gate="proven"
    )


@pytest.fixture
def learner(app) -> Iterator[Learner]:
    """A guest who has done both steps of v1 (step 1's question answered over HTTP; the runs'
    passing checks written as a passing run records them) with a draft in step 2."""
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        person.get(STEP1)
        answered = person.post(
            f"{STEP1}/questions/world-size-question/answer", {"choice": "4"},
            follow_redirects=False,
        )  # fmt: skip
        assert "was=right" in answered.headers["location"]
        with Session(app.state.engine) as session:
            found = list(session.exec(select(LabStepState)))
            assert len(found) == 1 and found[0].content_version is not None
            version = found[0].content_version
            found[0].checks_passed_at = found[0].passed_at = PASSED
            session.add(found[0])
            session.add(
                LabStepState(
                    user_id=found[0].user_id, lab_id="hello-ranks", step_id="all-reduce",
                    draft="print('my sum')\n", failed_runs=1, checks_passed_at=PASSED,
                    passed_at=PASSED, updated_at=PASSED, content_version=version,
                )
            )  # fmt: skip
            session.commit()
        yield person


def states(app: FastAPI) -> dict[str, LabStepState]:
    with Session(app.state.engine) as session:
        return {state.step_id: state for state in session.exec(select(LabStepState))}


def step_states(page: str) -> dict[str, str]:
    return dict(re.findall(r'data-step-id="([\w-]+)" data-state="(\w+)"', page))


def offered(page: str) -> str:
    form = r'action="/labs/hello-ranks/move">\s*<input[^>]*>\s*'
    found = re.search(form + r'<input type="hidden" name="version" value="([0-9a-f]{64})"', page)
    assert found is not None, page
    return found[1]


def test_no_offer_while_the_lab_is_unchanged(learner):
    page = learner.get(LAB).text
    assert 'data-testid="lab-newer"' not in page
    assert step_states(page) == {"print-rank": "passed", "all-reduce": "passed"}


def test_moving_keeps_unchanged_steps_and_starts_changed_ones_over(staff, learner, folder, app):
    publish_edit(staff, folder, "hello/lab.yaml", STEP2_TITLE)
    page = learner.get(LAB).text
    assert "A newer version of this lab is live" in page
    changed = re.search(r'data-testid="lab-newer-changed">([^<]+)<', page)
    assert changed is not None and "Sum the ranks" in changed[1]
    assert "Every rank says hello" not in changed[1]  # step 1 did not change
    assert "Add the ranks up" in page and step_states(page)["all-reduce"] == "passed"  # still v1
    before = states(app)
    moved = learner.post(f"{LAB}/move", {"version": offered(page)})
    assert 'data-testid="lab-moved"' in moved.text and 'data-testid="lab-newer"' not in moved.text
    assert "Sum the ranks" in moved.text and "Add the ranks up" not in moved.text
    assert step_states(moved.text) == {"print-rank": "passed", "all-reduce": "open"}
    after = states(app)
    assert after["print-rank"].passed_at == PASSED and after["print-rank"].restarted_at is None
    assert after["all-reduce"].passed_at is None and after["all-reduce"].draft is None
    assert after["all-reduce"].failed_runs == 0 and after["all-reduce"].restarted_at is not None
    assert {state.content_version for state in after.values()} != {
        state.content_version for state in before.values()
    }
    assert len({state.content_version for state in after.values()}) == 1
    # Moved already: a second press (another tab) changes nothing and says so.
    assert learner.post(f"{LAB}/move", {"version": offered(page)}).status_code == 409


def test_a_changed_step_asks_its_questions_again_after_a_move(staff, learner, folder, clock):
    publish_edit(staff, folder, "hello/lab.yaml", STEP1_QUESTION)
    assert 'data-status="correct"' in learner.get(STEP1).text  # v1: answered right
    page = learner.get(LAB).text
    clock.advance(60)  # the move comes after the answer
    learner.post(f"{LAB}/move", {"version": offered(page)})
    step = learner.get(STEP1).text
    assert 'data-status="correct"' not in step and 'data-status="open"' in step
    # Step 2 did not change: it keeps its done state (it opens again once step 1 is passed).
    assert step_states(learner.get(LAB).text) == {"print-rank": "open", "all-reduce": "passed"}


def test_a_run_started_before_the_move_passes_nothing_after_it(staff, learner, folder, app, clock):
    # A run of the old step 1 in flight in another tab while the learner moves: it ends after
    # the move with the old step's checks passed, and must not pass the restarted step.
    publish_edit(staff, folder, "hello/lab.yaml", STEP1_QUESTION)
    page = learner.get(LAB).text
    (user_id,) = {state.user_id for state in states(app).values()}
    with Session(app.state.engine) as session:
        run = LabRun(
            user_id=user_id, lab_id="hello-ranks", step_id="print-rank", nproc=2,
            code="print('old')\n", status="running", started_at=clock(),
        )  # fmt: skip
        session.add(run)
        session.commit()
        session.refresh(run)
        session.expunge(run)
    clock.advance(60)
    learner.post(f"{LAB}/move", {"version": offered(page)})
    assert states(app)["print-rank"].checks_passed_at is None  # restarted by the move
    lab = app.state.catalog.lab("hello-ranks")
    step = next(one for one in lab.lab.steps if one.id == "print-rank")
    clock.advance(5)
    with Session(app.state.engine) as session:
        labs.finish_run(session, run, labs.Finished("ok", None, [], True), step, clock())
    after = states(app)["print-rank"]
    assert after.checks_passed_at is None and after.passed_at is None and after.failed_runs == 0


def test_staying_keeps_the_version_begun_and_still_offers_the_move(staff, learner, folder, app):
    publish_edit(staff, folder, "hello/lab.yaml", STEP2_TITLE)
    page = learner.get(LAB).text
    version = offered(page)
    stayed = learner.post(f"{LAB}/stay", {"version": version})
    assert "You are on the version of this lab you began" in stayed.text
    assert 'data-testid="lab-stay"' not in stayed.text and offered(stayed.text) == version
    assert "Add the ranks up" in stayed.text
    assert step_states(stayed.text) == {"print-rank": "passed", "all-reduce": "passed"}
    assert {state.stayed_on for state in states(app).values()} == {version}


def test_a_stale_or_forged_offer_is_refused(staff, learner, folder, app):
    publish_edit(staff, folder, "hello/lab.yaml", STEP2_TITLE)
    stale = learner.get(LAB).text
    publish_edit(staff, folder, "hello/lab.yaml", ("title: Sum the ranks", "title: Sum them"))
    refused = learner.post(f"{LAB}/move", {"version": offered(stale)})
    assert refused.status_code == 409 and "published since" in refused.text
    assert learner.post(f"{LAB}/move", {"version": "nope"}).status_code in (400, 422)
    no_token = learner.client.post(f"{LAB}/move", data={"version": offered(stale)})
    assert no_token.status_code == 403
    assert all(state.passed_at == PASSED for state in states(app).values())  # nothing moved

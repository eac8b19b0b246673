"""The Review page keeps the version it showed, as practice does: a Reload that publishes a new
key or drops the item changes nothing a learner has open, and a due card whose item is gone
from the course is skipped with a word, never a 404 (real SQLite/PostgreSQL, the gate as
production has it)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.modes.models import ModeAnswer
from tests.conftest import FIXTURES
from tests.modes.test_modes_http import rows, verdict
from tests.publishing.test_gate import prove
from tests.publishing.test_learner_versions import publish_edit, shown_version
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

PRACTICE = "/topics/drill/practice/modes-drill/world-size"
REVIEW_ANSWER = "/review/modes-drill/world-size/answer"
# The item the tests drop from the set in a new version.
WORLD_SIZE_ITEM = re.compile(r"^  - id: world-size\n.*?(?=^  - id: )", re.DOTALL | re.MULTILINE)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "modes", target / "modes")
    prove(target)
    return target


@pytest.fixture
def app(app_factory, database_url, folder) -> FastAPI:
    return app_factory(
        database_url, executor=FakeExecutor(), challenges_dir=folder, content_gate="proven"
    )


@pytest.fixture
def learner(app) -> Iterator[Learner]:
    """A guest who missed `world-size` in practice: it is due for review at once."""
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        person.get(PRACTICE)
        person.post(f"{PRACTICE}/answer", {"choice": "A"})  # the key is B
        yield person


def open_review(learner: Learner) -> str:
    """Open the Review page on `world-size`; return the version its form carries."""
    page = learner.get("/review").text
    assert 'data-testid="review-current"' in page and "World size" in page
    return shown_version(page)


def drop_world_size(staff: Learner, folder: Path) -> None:
    """Publish a version of the set without `world-size`."""
    path = folder / "modes" / "set.yaml"
    text, count = WORLD_SIZE_ITEM.subn("", path.read_text())
    assert count == 1
    path.write_text(text)
    prove(folder)
    staff.post("/staff/content/reload")


def test_an_open_review_question_is_judged_by_the_version_it_showed(
    staff, learner, folder, database_url
):
    version = open_review(learner)
    publish_edit(
        staff, folder, "modes/set.yaml",
        ("title: World size", "title: Ranks started"), ("    answer: B", "    answer: A"),
    )  # fmt: skip
    answered = learner.post(REVIEW_ANSWER, {"choice": "B", "version": version})
    assert verdict(answered.text) == "✓ Correct"  # v1's key, though v2 keys A
    assert "World size" in answered.text and "Ranks started" not in answered.text
    review = [a.correct for a in rows(database_url, ModeAnswer, mode="review")]
    assert review == [True]


def test_a_review_question_whose_item_a_new_version_dropped_is_still_judged_by_its_version(
    staff, learner, folder, database_url
):
    version = open_review(learner)
    drop_world_size(staff, folder)
    answered = learner.post(REVIEW_ANSWER, {"choice": "B", "version": version})
    assert answered.status_code == 200
    assert verdict(answered.text) == "✓ Correct"
    assert [a.correct for a in rows(database_url, ModeAnswer, mode="review")] == [True]


def test_a_due_card_whose_item_is_gone_is_skipped_with_a_word(staff, learner, folder, database_url):
    open_review(learner)
    drop_world_size(staff, folder)
    page = learner.get("/review")
    assert page.status_code == 200
    assert 'data-testid="review-skipped">1 due review is skipped' in page.text
    assert 'data-testid="review-empty"' in page.text
    # A page from before versions were carried (no version): skipped with a word, not a 404.
    answered = learner.post(REVIEW_ANSWER, {"choice": "B"})
    assert answered.status_code == 200 and 'data-testid="review-gone"' in answered.text
    assert rows(database_url, ModeAnswer, mode="review") == []

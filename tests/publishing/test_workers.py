"""A Reload in one process reaches every process: two app instances on one database (as
`ranklab serve --workers 2` runs them), the second serving what the first published."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.conftest import TEST_CHALLENGES
from tests.publishing.test_gate import prove
from tests.support.accounts import sign_up
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

SET_PAGE = "/sets/test-basics"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    prove(target)
    return target


def worker(app_factory, database_url: str, folder: Path, **overrides: object) -> FastAPI:
    return app_factory(
        database_url, executor=FakeExecutor(), challenges_dir=folder, content_gate="proven",
        **overrides,
    )  # fmt: skip


def test_a_reload_in_one_worker_is_served_by_the_other(app_factory, database_url, folder):
    first = worker(app_factory, database_url, folder, content_check_s=0)
    second = worker(app_factory, database_url, folder, content_check_s=0)
    with TestClient(first) as one, TestClient(second) as two:
        staff, visitor = Learner(one), Learner(two)
        sign_up(staff, "teacher", database_url, Role.INSTRUCTOR)
        assert "Test basics" in visitor.get(SET_PAGE).text
        set_file = folder / "basics" / "set.yaml"
        set_file.write_text(set_file.read_text().replace("title: Test basics", "title: Renamed"))
        prove(folder)
        staff.post("/staff/content/reload")
        page = visitor.get(SET_PAGE).text
        assert "Renamed" in page and "Test basics" not in page


def test_a_worker_looks_again_only_when_its_interval_has_passed(app_factory, database_url, folder):
    first = worker(app_factory, database_url, folder, content_check_s=0)
    second = worker(app_factory, database_url, folder, content_check_s=3600)
    with TestClient(first) as one, TestClient(second) as two:
        staff, visitor = Learner(one), Learner(two)
        sign_up(staff, "teacher", database_url, Role.INSTRUCTOR)
        visitor.get(SET_PAGE)  # the first look after start: the next is an hour away
        set_file = folder / "basics" / "set.yaml"
        set_file.write_text(set_file.read_text().replace("title: Test basics", "title: Renamed"))
        prove(folder)
        staff.post("/staff/content/reload")
        assert "Test basics" in visitor.get(SET_PAGE).text
        second.state.catalog.follow()  # what the check does when it is due
        assert "Renamed" in visitor.get(SET_PAGE).text

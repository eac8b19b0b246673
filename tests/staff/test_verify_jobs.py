"""Verify on the preview page is a background job: progress as it goes, one job per click target."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.support.accounts import sign_up
from tests.support.fake_executor import GatedExecutor
from tests.support.learner import Learner

SET_URL = "/staff/sets/test-runs/verify"
HX = {"HX-Request": "true"}


@pytest.fixture
def executor() -> GatedExecutor:
    return GatedExecutor()


@pytest.fixture
def app(app_factory, sqlite_url, executor):
    return app_factory(sqlite_url, executor=executor)


@pytest.fixture
def instructor(app, sqlite_url):
    with TestClient(app) as client:
        person = Learner(client)
        sign_up(person, "teacher", sqlite_url, Role.INSTRUCTOR)
        yield person


def test_a_running_verification_polls_and_a_second_click_joins_it(app, instructor, executor):
    first = instructor.post(SET_URL, headers=HX).text
    assert executor.entered.wait(10)
    second = instructor.post(SET_URL, headers=HX).text
    for fragment in (first, second):
        assert 'data-job-state="running"' in fragment
        assert f'hx-get="{SET_URL}" hx-trigger="every 1s" hx-swap="outerHTML"' in fragment
    progress = instructor.get(SET_URL, headers=HX).text
    assert re.search(r'data-item-id="all-reduce" data-state="running"', progress)
    assert "Verifying… 0 of 1 item done." in progress
    executor.gate.set()
    assert app.state.verify_jobs.get(("test-runs", None)).wait(10)
    done = instructor.get(SET_URL, headers=HX).text
    assert 'data-job-state="done"' in done and "hx-trigger" not in done
    assert 'data-verdict="pass"' in done and "no key refuted" in done
    assert len(executor.requests) == 3  # one job of three runs (as `ranklab verify`), not two jobs


def test_before_any_verification_the_progress_says_so_and_does_not_poll(instructor):
    fragment = instructor.get(SET_URL, headers=HX).text
    assert "No verification has run here" in fragment and "hx-trigger" not in fragment


def test_an_item_with_nothing_to_run_cannot_be_verified(instructor):
    url = "/staff/sets/test-basics/items/world-size/verify"
    assert instructor.post(url, headers=HX).status_code == 404
    assert instructor.get(url, headers=HX).status_code == 404


def test_a_verified_key_shows_its_proof_to_learners(app, instructor, executor):
    executor.gate.set()
    instructor.post("/staff/sets/test-runs/items/all-reduce/verify", headers=HX)
    assert app.state.verify_jobs.get(("test-runs", "all-reduce")).wait(10)
    attempt = instructor.start("test-runs")
    instructor.answer(attempt, 1, "A")
    page = instructor.get(f"{attempt}/q/1").text
    assert re.search(r"Verified on torch 2\.13\.0\+cpu, gloo, 2 ranks, \d{4}-\d\d-\d\d", page)

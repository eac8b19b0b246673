"""Run it: after answering, the snippet's per-rank output streams to the page (fake executor)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner


@pytest.fixture
def executor() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
def learner(app_factory, sqlite_url, executor):
    with TestClient(app_factory(sqlite_url, executor=executor)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        yield learner


def events(body: str) -> list[tuple[str, dict]]:
    parsed = []
    for frame in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        parsed.append((lines["event"], json.loads(lines["data"])))
    return parsed


def test_running_before_answering_is_refused(learner, executor):
    attempt = learner.start("test-runs")
    response = learner.get(f"{attempt}/q/1/run")
    assert response.status_code == 409 and "Answer the question first" in response.text
    assert executor.requests == []
    assert 'data-testid="run-it"' not in learner.get(f"{attempt}/q/1").text


def test_after_answering_each_ranks_output_streams_then_the_result(learner, executor):
    attempt = learner.start("test-runs")
    learner.answer(attempt, 1, "A")
    page = learner.get(f"{attempt}/q/1").text
    assert 'data-testid="run-button"' in page and "2 real ranks" in page
    response = learner.get(f"{attempt}/q/1/run")
    assert response.headers["content-type"].startswith("text/event-stream")
    streamed = events(response.text)
    assert [name for name, _ in streamed] == ["output", "output", "result"]
    assert streamed[0][1] == {"rank": 0, "stream": "stdout", "text": "1.0\n"}
    result = streamed[-1][1]
    assert result["environment"]["torch"] == "2.13.0+cpu" and result["observed_at"]
    request = executor.requests[0]
    assert (request.nproc, request.backend, request.timeout_s) == (2, "gloo", 10)
    assert "dist.all_reduce(value)" in request.code


def test_when_the_executor_is_down_the_page_says_runs_are_unavailable(learner, executor):
    attempt = learner.start("test-runs")
    learner.answer(attempt, 1, "B")
    learner.answer(attempt, 1, "B")
    executor.up = False
    page = learner.get(f"{attempt}/q/1").text
    assert "Runs are unavailable right now" in page
    assert "OBSERVED-EVIDENCE" in page  # the question and explanation still work
    streamed = events(learner.get(f"{attempt}/q/1/run").text)
    assert streamed == [("unavailable", {"message": streamed[0][1]["message"]})]


def test_non_executable_questions_have_nothing_to_run(learner):
    attempt = learner.start("test-basics")
    learner.answer(attempt, 1, "B")
    assert learner.get(f"{attempt}/q/1/run").status_code == 404

"""Run it: after answering, the snippet's per-rank output streams to the page.

The fake executor shows what the app does with an executor's answer; one test runs the snippet on
real ranks, so the output it checks is what the ranks printed, not what a fake was told to say.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.executor_client import ExecutorUnavailable, RunEvent
from app.runs.service import HEALTH_FRESH_S
from executor.contract import OutputEvent, RunRequest
from tests.conftest import TEST_CHALLENGES
from tests.support.fake_executor import FakeExecutor, canned_result
from tests.support.learner import Learner


@dataclass
class ScriptedExecutor(FakeExecutor):
    """A fake executor that answers with the events a test gives it, in that order."""

    script: list[RunEvent] = field(default_factory=list)

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        self.requests.append(request)
        if not self.up:
            raise ExecutorUnavailable("down")
        yield from self.script


@pytest.fixture
def executor() -> ScriptedExecutor:
    return ScriptedExecutor()


@contextmanager
def guest_on(app) -> Iterator[Learner]:
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        yield learner


@pytest.fixture
def learner(app_factory, sqlite_url, executor):
    with guest_on(app_factory(sqlite_url, executor=executor)) as learner:
        yield learner


@pytest.fixture
def real_learner(app_factory, sqlite_url, executor_url):
    """A guest on an app whose executor runs snippets on real ranks (the session's executor)."""
    with guest_on(app_factory(sqlite_url, executor_url=executor_url)) as learner:
        yield learner


def events(body: str) -> list[tuple[str, dict]]:
    parsed = []
    for frame in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        parsed.append((lines["event"], json.loads(lines["data"])))
    return parsed


def printed_by_rank(streamed: list[tuple[str, dict]]) -> dict[tuple[int, str], str]:
    """Join the streamed chunks into what each rank wrote on each stream."""
    joined: dict[tuple[int, str], str] = {}
    for name, data in streamed:
        if name == "output":
            key = (data["rank"], data["stream"])
            joined[key] = joined.get(key, "") + data["text"]
    return joined


def test_running_before_answering_is_refused(learner, executor):
    attempt = learner.start("test-runs")
    response = learner.get(f"{attempt}/q/1/run")
    assert response.status_code == 409 and "Answer the question first" in response.text
    assert executor.requests == []
    assert 'data-testid="run-it"' not in learner.get(f"{attempt}/q/1").text


@pytest.mark.executor
def test_after_answering_the_real_ranks_output_streams_then_the_result(real_learner):
    """The snippet all-reduces each rank's number (0 and 1): every real rank must print 1.0."""
    learner = real_learner
    attempt = learner.start("test-runs")
    learner.answer(attempt, 1, "A")
    page = learner.get(f"{attempt}/q/1").text
    assert 'data-testid="run-button"' in page and "2 real ranks" in page
    response = learner.get(f"{attempt}/q/1/run")
    assert response.headers["content-type"].startswith("text/event-stream")
    streamed = events(response.text)
    assert [name for name, _ in streamed] == ["output"] * (len(streamed) - 1) + ["result"]
    assert printed_by_rank(streamed) == {(0, "stdout"): "1.0\n", (1, "stdout"): "1.0\n"}
    result = streamed[-1][1]
    assert result["status"] == "ok"
    assert [rank["stdout"] for rank in result["ranks"]] == ["1.0\n", "1.0\n"]
    environment = result["environment"]
    assert (environment["nproc"], environment["backend"]) == (2, "gloo")
    assert environment["torch"] == version("torch")  # observed in the ranks, not a canned value


def test_the_page_gets_the_executors_events_in_order_and_the_executor_gets_the_item(
    learner, executor
):
    """Whatever the executor streams (interleaved ranks, stderr) reaches the page as it came."""
    chunks = [
        OutputEvent(rank=1, stream="stdout", text="from rank 1\n"),
        OutputEvent(rank=0, stream="stderr", text="warn"),
        OutputEvent(rank=0, stream="stderr", text="ing\n"),
        OutputEvent(rank=0, stream="stdout", text="from rank 0\n"),
    ]
    result = canned_result("from rank 0\n", "from rank 1\n")
    executor.script = [*chunks, result]
    attempt = learner.start("test-runs")
    learner.answer(attempt, 1, "A")
    streamed = events(learner.get(f"{attempt}/q/1/run").text)
    assert streamed == [("output", chunk.model_dump(mode="json")) for chunk in chunks] + [
        ("result", result.model_dump(mode="json"))
    ]
    request = executor.requests[0]
    assert (request.nproc, request.backend, request.timeout_s) == (2, "gloo", 10)  # set.yaml
    snippet = TEST_CHALLENGES / "runs" / "all_reduce.py"
    assert request.code == snippet.read_text()


def test_when_the_executor_is_down_the_page_says_runs_are_unavailable(learner, executor, clock):
    attempt = learner.start("test-runs")
    learner.answer(attempt, 1, "B")
    learner.answer(attempt, 1, "B")
    executor.up = False
    clock.advance(HEALTH_FRESH_S)  # pages trust the executor's last answer this long
    page = learner.get(f"{attempt}/q/1").text
    assert "Runs are unavailable right now" in page
    assert "OBSERVED-EVIDENCE" in page  # the question and explanation still work
    streamed = events(learner.get(f"{attempt}/q/1/run").text)
    assert streamed == [("unavailable", {"message": streamed[0][1]["message"]})]


@dataclass
class CountingExecutor(ScriptedExecutor):
    """A fake executor that counts its health checks."""

    checks: int = 0

    def health(self) -> dict[str, Any] | None:
        self.checks += 1
        return super().health()


def test_a_class_on_feedback_pages_asks_the_executor_once_an_interval(
    app_factory, sqlite_url, clock
):
    """Every closed question's page says whether its snippet can be run; the executor is asked
    once in HEALTH_FRESH_S, and a change shows on the pages after it."""
    executor = CountingExecutor()
    with guest_on(app_factory(sqlite_url, executor=executor)) as learner:
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "B")
        learner.answer(attempt, 1, "B")
        for _ in range(5):
            assert 'data-testid="run-button"' in learner.get(f"{attempt}/q/1").text
        assert executor.checks == 1
        executor.up = False
        clock.advance(HEALTH_FRESH_S - 0.5)
        assert 'data-testid="run-button"' in learner.get(f"{attempt}/q/1").text  # as last asked
        assert executor.checks == 1
        clock.advance(0.5)
        assert "Runs are unavailable right now" in learner.get(f"{attempt}/q/1").text
        assert executor.checks == 2


def test_non_executable_questions_have_nothing_to_run(learner):
    attempt = learner.start("test-basics")
    learner.answer(attempt, 1, "B")
    assert learner.get(f"{attempt}/q/1/run").status_code == 404


@dataclass
class GpuExecutor(ScriptedExecutor):
    """A fake executor on a host with `gpus` GPUs."""

    gpus: int = 0

    def health(self) -> dict[str, Any] | None:
        health = super().health()
        return None if health is None else {**health, "cuda_devices": self.gpus}


@pytest.mark.parametrize("gpus", [0, 1])
def test_a_snippet_needing_more_gpus_than_the_executor_has_says_so_instead_of_a_run_button(
    app_factory, sqlite_url, tmp_path, gpus
):
    content = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES / "runs", content / "runs")
    set_file = content / "runs" / "set.yaml"
    set_file.write_text(
        set_file.read_text().replace("{nproc: 2, backend: gloo,", "{nproc: 2, backend: nccl,")
    )
    with guest_on(
        app_factory(sqlite_url, executor=GpuExecutor(gpus=gpus), challenges_dir=content)
    ) as learner:
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        page = learner.get(f"{attempt}/q/1").text
    assert 'data-testid="run-button"' not in page
    here = "none" if gpus == 0 else "1"
    assert f"This snippet needs 2 GPUs, and the executor serving this course has {here}" in page


def test_a_gpu_snippet_gets_its_run_button_where_the_executor_has_enough_gpus(
    app_factory, sqlite_url, tmp_path
):
    content = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES / "runs", content / "runs")
    set_file = content / "runs" / "set.yaml"
    set_file.write_text(
        set_file.read_text().replace(
            "backend: gloo, timeout_s: 10}", "backend: gloo, gpus: 2, timeout_s: 10}"
        )
    )
    executor = GpuExecutor(gpus=2)
    with guest_on(app_factory(sqlite_url, executor=executor, challenges_dir=content)) as learner:
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        page = learner.get(f"{attempt}/q/1").text
        assert 'data-testid="run-button"' in page and "runs-need-gpus" not in page
        learner.get(f"{attempt}/q/1/run")
    assert executor.requests[0].gpus == 2  # the declaration reaches the executor

"""Lab runs on the job bus, across app processes: a run started on one app is followed (with a
reconnect), stopped and guarded from any other, and a reader is not left waiting when the app
driving the run dies. Two apps share one Redis and one SQLite file; an agent (real, with a
scripted runner: no torch) serves the queue."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from fastapi import FastAPI

from app.bus_client import RedisExecutorClient
from app.labs.live_redis import run_key
from executor import bus
from executor.contract import RunResult
from tests.bus.conftest import Owner, serve_process
from tests.bus.scripted_agent import ScriptedRunner
from tests.conftest import FIXTURES
from tests.support.learner import CSRF_META
from tests.support.live import serving
from tests.support.waiting import wait_for

STEP = "/labs/hello-ranks/steps/print-rank"
HELLO = "say hello from rank {rank} of {world}"


@pytest.fixture
def content(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "labs" / "hello", target / "hello")
    return target


def _app(app_factory: Any, sqlite_url: str, queue_url: str, content: Path) -> FastAPI:
    app: FastAPI = app_factory(
        sqlite_url,
        executor=RedisExecutorClient(queue_url),
        challenges_dir=content,
        lab_runs_per_learner="30/minute",
    )
    return app


@pytest.fixture
def apps(
    app_factory: Any, sqlite_url: str, queue_url: str, content: Path, runner: ScriptedRunner
) -> Iterator[tuple[str, str]]:
    """Two apps (as two workers would be), each on its own port: their base URLs."""
    first = _app(app_factory, sqlite_url, queue_url, content)
    second = _app(app_factory, sqlite_url, queue_url, content)
    with serving(first) as a, serving(second) as b:
        yield a, b


class Browser:
    """One learner's browser: its cookies go to every app (they share the host, 127.0.0.1)."""

    def __init__(self) -> None:
        self.http = httpx.Client(timeout=30)
        self.csrf = ""

    def start_as_guest(self, app: str) -> None:
        match = CSRF_META.search(self.http.get(f"{app}/").text)
        assert match is not None
        self.http.post(f"{app}/guest", data={"csrf_token": match[1], "next": "/"})
        self.page(app, STEP)

    def page(self, app: str, path: str) -> str:
        text = self.http.get(f"{app}{path}").text
        match = CSRF_META.search(text)
        if match:
            self.csrf = match[1]
        return text

    def run(self, app: str, code: str, nproc: int = 2) -> httpx.Response:
        return self.http.post(
            f"{app}{STEP}/runs",
            data={"code": code, "nproc": str(nproc), "csrf_token": self.csrf},
            headers={"Accept": "application/json"},
        )

    def stop(self, app: str, run_id: int) -> httpx.Response:
        return self.http.post(
            f"{app}/labs/runs/{run_id}/stop",
            headers={"X-CSRF-Token": self.csrf, "Accept": "application/json"},
        )

    def events(
        self, url: str, last_event_id: int | None = None, until: str | None = None
    ) -> list[dict[str, Any]]:
        """Read a run's SSE frames to the end, or until an event named `until`, then hang up."""
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        frames: list[dict[str, Any]] = []
        with self.http.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200, response.read()
            for frame in _parse(response.iter_lines()):
                frames.append(frame)
                if frame["event"] == until:
                    break
        return frames

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    person = Browser()
    yield person
    person.close()


def _parse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """SSE frames (event, data, and id as a number when there is one) from response lines."""
    frame: dict[str, Any] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(": ")
            frame[name] = json.loads(value) if name == "data" else value
        elif frame:
            yield {**frame, "id": int(frame["id"]) if "id" in frame else None}
            frame = {}


def _names(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["event"] for frame in frames]


def test_a_run_started_on_one_app_is_followed_on_another_to_its_end_across_a_reconnect(
    apps: tuple[str, str], browser: Browser, runner: ScriptedRunner, queue_url: str
) -> None:
    a, b = apps
    browser.start_as_guest(a)
    started = browser.run(a, "put hello from rank {rank}\nwait\nsay  of {world}")
    assert started.status_code == 201, started.text
    events = started.json()["events"]
    # The first lines arrive on the other app; then the connection drops mid-run.
    first = browser.events(f"{b}{events}", until="output")
    first += browser.events(f"{b}{events}", last_event_id=first[-1]["id"], until="output")
    runner.release()
    rest = browser.events(f"{b}{events}", last_event_id=first[-1]["id"])
    frames = first + rest
    assert [frame["id"] for frame in frames] == list(range(len(frames)))  # no gap, no repeat
    assert _names(frames) == ["output"] * 4 + ["result", "checks", "end"]
    shown = {0: "", 1: ""}
    for frame in frames[:4]:
        shown[frame["data"]["rank"]] += frame["data"]["text"]
    assert shown == {rank: f"hello from rank {rank} of 2\n" for rank in shown}
    assert frames[4]["data"]["status"] == "ok"
    assert frames[5]["data"]["passed"] is True, frames[5]
    # Every app relays the same log, and the step page on either shows the recorded run.
    assert browser.events(f"{a}{events}") == frames
    assert "Last run: finished" in browser.page(b, STEP)
    # Once the log has expired from Redis the run is replayed from its record.
    client = redis.Redis.from_url(queue_url)
    client.delete(*client.keys("ranklab:lab:*"))
    client.close()
    replayed = browser.events(f"{b}{events}")
    assert _names(replayed) == ["output", "output", "result", "checks", "end"]


def test_a_run_driven_by_one_app_is_stopped_from_another(
    apps: tuple[str, str], browser: Browser, runner: ScriptedRunner
) -> None:
    a, b = apps
    browser.start_as_guest(a)
    started = browser.run(a, "say started\nhang")
    assert started.status_code == 201, started.text
    run_id, events = started.json()["run_id"], started.json()["events"]
    browser.events(f"{b}{events}", until="output")  # the ranks are running
    stopped = browser.stop(b, run_id)
    assert stopped.status_code == 200 and stopped.json() == {"stopped": True}
    wait_for(lambda: runner.killed == 1, 10, "the agent to kill the run's ranks")
    frames = browser.events(f"{b}{events}")
    assert _names(frames)[-3:] == ["stopped", "checks", "end"]
    assert frames[-3]["data"]["message"] == (
        "Stopped by you: every rank was killed; what it printed stays above."
    )
    assert "Last run: stopped" in browser.page(a, STEP)  # recorded by the app that drove it
    assert browser.stop(b, run_id).status_code == 409  # it has ended
    assert browser.stop(a, run_id).status_code == 409
    assert browser.run(b, HELLO).status_code == 201  # free to run again


def test_another_learner_can_neither_follow_nor_stop_a_run_on_any_app(
    apps: tuple[str, str], browser: Browser, runner: ScriptedRunner
) -> None:
    a, b = apps
    browser.start_as_guest(a)
    started = browser.run(a, "say started\nhang")
    run_id, events = started.json()["run_id"], started.json()["events"]
    other = Browser()
    try:
        other.start_as_guest(b)
        for app in (a, b):
            assert other.http.get(f"{app}{events}").status_code == 404
            assert other.stop(app, run_id).status_code == 404
    finally:
        other.close()
    browser.events(f"{a}{events}", until="output")
    assert browser.stop(b, run_id).status_code == 200  # the learner's own Stop still works
    wait_for(lambda: runner.killed == 1, 10, "the agent to kill the run's ranks")


@pytest.fixture
def owner(sqlite_url: str, queue_url: str, content: Path, tmp_path: Path) -> Iterator[Owner]:
    """An app in a process of its own, serving until the test kills it."""
    with serve_process(sqlite_url, queue_url, content, tmp_path / "owner.log") as served:
        yield served


def _agent_result(queue_url: str, run_id: int) -> RunResult | None:
    """What the agent reported for the job under a lab run (None while it runs)."""
    client = redis.Redis.from_url(queue_url, decode_responses=True)
    try:
        bus_run: Any = client.hget(run_key(run_id), "bus_run")
        assert bus_run, "the lab run keeps its job's bus id"
        raw: Any = client.get(bus.result_key(bus_run))
    finally:
        client.close()
    return RunResult.model_validate_json(raw) if raw else None


def _stopped_by_cancel(queue_url: str, run_id: int, runner: ScriptedRunner) -> None:
    """The agent stops the run soon after it is cut off: `hang` holds forever otherwise, and a
    real run would hold its ranks to the step's limit (20 s)."""
    wait_for(lambda: runner.killed == 1, 3, "the agent to stop the run")
    result = wait_for(lambda: _agent_result(queue_url, run_id), 3, "the agent's result")
    assert result.message == bus.STOPPED_MESSAGE


def test_a_reader_is_told_the_run_was_cut_off_when_the_app_driving_it_dies(
    owner: Owner, apps: tuple[str, str], browser: Browser, runner: ScriptedRunner, queue_url: str
) -> None:
    _a, b = apps
    browser.start_as_guest(owner.url)
    started = browser.run(owner.url, "say started\nhang", nproc=1)
    assert started.status_code == 201, started.text
    url = f"{b}{started.json()['events']}"
    with browser.http.stream("GET", url) as response:  # a read times out after 30 s
        frames = _parse(response.iter_lines())
        assert next(frames)["event"] == "output"  # the ranks are running
        owner.kill()  # the app driving the run dies
        rest = list(frames)
    assert _names(rest) == ["unavailable", "checks", "end"]
    assert rest[0]["data"]["message"] == (
        "This run was cut off: the server running it stopped. Run it again."
    )
    _stopped_by_cancel(queue_url, started.json()["run_id"], runner)  # not left running
    assert "Last run: could not run" in browser.page(b, STEP)  # the row is recorded as ended
    assert browser.run(b, HELLO).status_code == 201  # and no longer blocks a new run


def test_stop_from_another_app_ends_a_run_whose_app_died(
    owner: Owner, apps: tuple[str, str], browser: Browser, runner: ScriptedRunner, queue_url: str
) -> None:
    _a, b = apps
    browser.start_as_guest(owner.url)
    started = browser.run(owner.url, "say started\nhang", nproc=1)
    run_id, events = started.json()["run_id"], started.json()["events"]
    browser.events(f"{b}{events}", until="output")
    owner.kill()
    stopped = browser.stop(b, run_id)  # answers once the dead app's lease has run out
    assert stopped.status_code == 200 and stopped.json() == {"stopped": True}
    frames = browser.events(f"{b}{events}")
    assert _names(frames) == ["output", "stopped", "checks", "end"]
    assert frames[1]["data"]["message"] == "Stopped: the server running it had already stopped."
    assert "Last run: stopped" in browser.page(b, STEP)
    _stopped_by_cancel(queue_url, run_id, runner)  # its ranks too

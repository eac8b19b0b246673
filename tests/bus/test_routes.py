"""GET /runs/{id}/events: a bus run's output as SSE that resumes from Last-Event-ID."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from app.bus_client import RedisExecutorClient
from executor import bus
from executor.contract import RunRequest
from executor.ports import free_port
from tests.bus.conftest import Fleet
from tests.support.learner import CSRF_META, Learner
from tests.support.waiting import wait_for

pytestmark = pytest.mark.executor


def _frames(lines: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """Parse SSE frames (id, event, data) from response lines, stopping after `limit`."""
    frames: list[dict[str, Any]] = []
    frame: dict[str, Any] = {}
    for line in lines:
        if line == "":
            if frame:
                frames.append(frame)
                frame = {}
                if limit is not None and len(frames) == limit:
                    break
        else:
            field, _, value = line.partition(": ")
            frame[field] = json.loads(value) if field == "data" else value
    return frames


def test_a_dropped_sse_connection_resumes_where_it_was(
    fleet: Fleet, app_factory: Any, sqlite_url: str
) -> None:
    executor = RedisExecutorClient(fleet.redis_url)
    code = (
        "import time\nfor n in range(6):\n    print('step', n, flush=True)\n    time.sleep(0.2)\n"
    )
    run_id = executor.submit(RunRequest(code=code, nproc=1, backend="gloo", timeout_s=30))
    with TestClient(app_factory(sqlite_url, executor=executor)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        url = f"/runs/{run_id}/events"
        with client.stream("GET", url) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            frames = _frames(response.iter_lines())
        # A browser whose connection dropped after the second event reconnects with its id.
        headers = {"Last-Event-ID": frames[1]["id"]}
        with client.stream("GET", url, headers=headers) as response:
            rest = _frames(response.iter_lines())
    assert rest == frames[2:]  # the rest: no gap, no repeat
    assert [frame["event"] for frame in frames][-1] == "result"
    assert len({frame["id"] for frame in frames}) == len(frames)
    text = "".join(frame["data"]["text"] for frame in frames if frame["event"] == "output")
    assert text == "".join(f"step {n}\n" for n in range(6))
    assert frames[-1]["data"]["ranks"][0]["stdout"] == text


def test_a_browser_that_drops_mid_run_resumes_through_a_real_server(
    fleet: Fleet, app_factory: Any, sqlite_url: str
) -> None:
    # A real server (uvicorn), so that hanging up mid-run is a real disconnect: the TestClient
    # never tells the app that a reader went away.
    executor = RedisExecutorClient(fleet.redis_url)
    code = (
        "import time\nfor n in range(6):\n    print('step', n, flush=True)\n    time.sleep(0.3)\n"
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app_factory(sqlite_url, executor=executor), port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        wait_for(lambda: server.started, 30, "the app to serve")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as browser:
            page = browser.get("/")
            match = CSRF_META.search(page.text)
            assert match is not None
            browser.post("/guest", data={"csrf_token": match[1], "next": "/"})
            run_id = executor.submit(RunRequest(code=code, nproc=1, backend="gloo", timeout_s=30))
            url = f"/runs/{run_id}/events"
            with browser.stream("GET", url) as response:
                assert response.status_code == 200  # signed in as a guest
                first = _frames(response.iter_lines(), limit=2)  # then the connection drops
            headers = {"Last-Event-ID": first[-1]["id"]}
            with browser.stream("GET", url, headers=headers) as response:
                rest = _frames(response.iter_lines())
    finally:
        server.should_exit = True
        thread.join()
    frames = first + rest
    assert frames[-1]["event"] == "result"
    assert len({frame["id"] for frame in frames}) == len(frames)  # no repeats
    text = "".join(frame["data"]["text"] for frame in frames if frame["event"] == "output")
    assert text == "".join(f"step {n}\n" for n in range(6))  # no gaps
    assert frames[-1]["data"]["ranks"][0]["stdout"] == text


def test_bus_run_events_need_a_signed_in_user_and_a_known_run(
    fleet: Fleet, app_factory: Any, sqlite_url: str
) -> None:
    executor = RedisExecutorClient(fleet.redis_url)
    with TestClient(app_factory(sqlite_url, executor=executor)) as client:
        unknown = f"/runs/{bus.new_run_id()}/events"
        assert client.get(unknown, follow_redirects=False).status_code == 303  # to log in
        Learner(client).start_as_guest()
        assert client.get(unknown).status_code == 404
        assert client.get("/runs/not-a-run-id/events").status_code == 404


def test_without_a_bus_there_are_no_bus_run_events(app_factory: Any, sqlite_url: str) -> None:
    with TestClient(app_factory(sqlite_url)) as client:
        Learner(client).start_as_guest()
        assert client.get(f"/runs/{bus.new_run_id()}/events").status_code == 404

"""The executor's HTTP API: contract, 4xx messages, 503 when full, SSE order and liveness."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import uvicorn

from executor.limits import max_body_bytes
from executor.runner import Executor
from executor.service import create_app
from executor.settings import ExecutorSettings

pytestmark = pytest.mark.executor

RANKS_PRINT = "import os\nprint('hello from', os.environ['RANK'])\n"


def call(runner: Executor, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """Send one request to a service built around the shared warm executor."""

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(runner.settings, executor=runner))
        async with httpx.AsyncClient(transport=transport, base_url="http://executor") as client:
            return await client.request(method, url, **kwargs)

    return asyncio.run(send())


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_healthz_is_ok_once_warm(executor: Executor) -> None:
    response = call(executor, "GET", "/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_healthz_is_503_before_the_pool_is_warm(executor: Executor) -> None:
    cold = Executor(executor.settings)  # never started
    try:
        assert call(cold, "GET", "/healthz").status_code == 503
    finally:
        cold.close()


def test_a_run_returns_the_contract_result(executor: Executor) -> None:
    body = {"code": RANKS_PRINT, "nproc": 2, "backend": "auto", "timeout_s": 10}
    response = call(executor, "POST", "/v1/runs", json=body)
    assert response.status_code == 200
    result = response.json()
    assert result["status"] == "ok"
    assert [r["stdout"] for r in result["ranks"]] == ["hello from 0\n", "hello from 1\n"]
    assert set(result["environment"]) == {
        "torch",
        "backend",
        "device",
        "nproc",
        "python",
        "launcher",
    }
    assert {"rank", "status", "exit_code", "stdout", "stderr", "truncated", "exception"} <= set(
        result["ranks"][0]
    )


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"code": "pass", "nproc": 0}, 422, "nproc must be between 1 and 8 (got 0)"),
        ({"code": "pass", "nproc": 99}, 422, "nproc must be between 1 and 8 (got 99)"),
        ({"code": "pass", "timeout_s": 600}, 422, "timeout_s must be between"),
        ({"code": "#" * 70000}, 413, "the limit is 65536 bytes"),
        ({"nproc": 2}, 422, "code: Field required"),
        ({"code": "pass", "backend": "mpi"}, 422, "backend:"),
        ({"code": "pass", "surprise": 1}, 422, "surprise: Extra inputs are not permitted"),
    ],
)
def test_bad_requests_get_a_clear_message(
    executor: Executor, body: dict[str, Any], status: int, fragment: str
) -> None:
    response = call(executor, "POST", "/v1/runs", json=body)
    assert response.status_code == status
    assert fragment in response.json()["detail"]


def test_a_full_queue_answers_503_with_retry_after(executor: Executor) -> None:
    busy = Executor(executor.settings, pool=executor.pool)
    busy.capacity.slots, busy.capacity.queue = 1, 0
    busy.capacity.active = 1  # the only slot is taken and nobody may wait
    for url in ("/v1/runs", "/v1/runs/stream"):
        response = call(busy, "POST", url, json={"code": "print(1)", "nproc": 1})
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "1"
        assert "busy" in response.json()["detail"]


def test_a_repeated_run_is_served_from_the_cache(executor: Executor) -> None:
    body = {"code": "print('cache me')", "nproc": 2, "timeout_s": 9}
    first = call(executor, "POST", "/v1/runs", json=body).json()
    second = call(executor, "POST", "/v1/runs", json=body).json()
    assert second["cached"] is True and first["cached"] is False
    assert second["observed_at"] == first["observed_at"]
    assert second["environment"] == first["environment"]
    assert second["ranks"] == first["ranks"]
    fresh = call(executor, "POST", "/v1/runs", json={**body, "use_cache": False}).json()
    assert fresh["cached"] is False


def test_the_stream_sends_outputs_then_the_result(executor: Executor) -> None:
    body = {"code": RANKS_PRINT, "nproc": 2, "use_cache": False}
    response = call(executor, "POST", "/v1/runs/stream", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[-1] == "result" and set(names[:-1]) == {"output"}
    # Ranks write unbuffered (as torchrun's `python -u`), so a line may come in several events.
    printed: dict[tuple[int, str], str] = {}
    for _, data in events[:-1]:
        key = (data["rank"], data["stream"])
        printed[key] = printed.get(key, "") + data["text"]
    assert printed == {(0, "stdout"): "hello from 0\n", (1, "stdout"): "hello from 1\n"}
    assert events[-1][1]["status"] == "ok"


def test_a_cached_stream_replays_outputs_then_the_result(executor: Executor) -> None:
    body = {"code": RANKS_PRINT + "# cached stream\n", "nproc": 2}
    call(executor, "POST", "/v1/runs", json=body)
    events = sse_events(call(executor, "POST", "/v1/runs/stream", json=body).text)
    assert [name for name, _ in events] == ["output", "output", "result"]
    assert events[-1][1]["cached"] is True


@pytest.fixture
def live_server(executor: Executor) -> Iterator[str]:
    """Serve the app for real (uvicorn on a free port): streaming needs a real socket."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        create_app(executor.settings, executor=executor), port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)


def test_output_streams_live_while_ranks_are_still_running(live_server: str) -> None:
    code = "import time\nprint('first', flush=True)\ntime.sleep(1.0)\nprint('second')\n"
    body = {"code": code, "nproc": 1, "use_cache": False}
    arrivals: list[tuple[float, str]] = []  # when, and all stdout seen by then
    seen = ""
    with httpx.stream("POST", f"{live_server}/v1/runs/stream", json=body, timeout=20) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: "):
                seen += json.loads(line[6:]).get("text", "")
                arrivals.append((time.monotonic(), seen))
    # Ranks write unbuffered (as torchrun's `python -u`): "first" and its newline may come in
    # separate events.
    first_at = next(at for at, text in arrivals if "first\n" in text)
    result_at = arrivals[-1][0]
    assert result_at - first_at >= 0.8  # "first" arrived a second before the run ended


def test_a_dead_warm_process_is_restarted(executor: Executor) -> None:
    settings = executor.settings.model_copy(update={"warm": False, "max_concurrent_runs": 1})
    runner = Executor(settings)
    try:
        runner.pool.start()
        process = runner.pool._process
        assert process is not None
        process.kill()  # the zygote dies (a crash, the OOM killer...)
        process.wait()
        assert call(runner, "GET", "/healthz").status_code == 503
        response = call(runner, "POST", "/v1/runs", json={"code": "print(1)", "nproc": 1})
        assert response.status_code == 503 and "Retry-After" in response.headers
        deadline = time.monotonic() + 60
        while call(runner, "GET", "/healthz").status_code != 200:
            assert time.monotonic() < deadline, "the executor never came back"
            time.sleep(0.2)
        result = call(runner, "POST", "/v1/runs", json={"code": "print(1)", "nproc": 1}).json()
        assert result["status"] == "ok"
    finally:
        runner.close()


@pytest.fixture
def cold() -> Iterator[Executor]:
    """An executor that is never started: these requests must be refused before any run."""
    runner = Executor(ExecutorSettings())
    yield runner
    runner.close()


def post_raw(runner: Executor, url: str, content: Any) -> httpx.Response:
    """POST a body exactly as given (bytes, or an async iterator of chunks)."""
    headers = {"content-type": "application/json"}
    return call(runner, "POST", url, content=content, headers=headers)


@pytest.mark.parametrize("url", ["/v1/runs", "/v1/runs/stream"])
def test_a_lone_surrogate_in_the_code_is_a_422_with_a_message(cold: Executor, url: str) -> None:
    response = post_raw(cold, url, b'{"code": "print(1) # \\ud800", "nproc": 1}')
    assert response.status_code == 422
    assert "character 11 is a lone surrogate" in response.json()["detail"]


def test_a_lone_surrogate_in_a_field_name_is_a_422_with_a_message(cold: Executor) -> None:
    response = post_raw(cold, "/v1/runs", b'{"code": "pass", "\\ud800": 1}')
    assert response.status_code == 422  # the JSON parser itself refuses it
    assert "unable to parse raw data as a unicode string" in response.json()["detail"]


def test_a_body_over_the_limit_is_refused_before_it_is_parsed(cold: Executor) -> None:
    limit = max_body_bytes(cold.settings.limits)
    not_json = b"x" * (limit + 1)  # parsing would answer 422; the size is checked first
    response = post_raw(cold, "/v1/runs", not_json)
    assert response.status_code == 413
    assert response.json()["detail"] == f"the request body is over the limit of {limit} bytes"


def test_a_streamed_body_is_cut_off_once_it_passes_the_limit(cold: Executor) -> None:
    limit = max_body_bytes(cold.settings.limits)
    chunk, sent = b"x" * 65536, 0

    async def endless() -> AsyncIterator[bytes]:  # no Content-Length: it is counted as it comes
        nonlocal sent
        while sent < 100 * limit:
            sent += len(chunk)
            yield chunk

    response = post_raw(cold, "/v1/runs/stream", endless())
    assert response.status_code == 413
    assert sent <= limit + 2 * len(chunk)  # the rest was never read


def test_the_largest_allowed_request_passes_the_body_limit(cold: Executor) -> None:
    code = "\x01" * cold.settings.limits.max_code_bytes  # six bytes each once JSON-escaped
    response = post_raw(cold, "/v1/runs", json.dumps({"code": code, "nproc": 1}).encode())
    assert response.status_code == 503  # checked and accepted; only then: not started


def test_with_a_token_the_run_api_refuses_requests_without_it(executor: Executor) -> None:
    guarded = Executor(executor.settings.model_copy(update={"token": "s3cret"}), executor.pool)
    body = {"code": "print('ran')", "nproc": 1, "use_cache": False}
    for path in ("/v1/runs", "/v1/runs/stream"):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            refused = call(guarded, "POST", path, json=body, headers=headers)
            assert refused.status_code == 401, (path, headers)
            assert "RANKLAB_EXECUTOR_TOKEN" in refused.json()["detail"]
    ran = call(guarded, "POST", "/v1/runs", json=body, headers={"Authorization": "Bearer s3cret"})
    assert ran.status_code == 200 and ran.json()["ranks"][0]["stdout"] == "ran\n"
    assert call(guarded, "GET", "/healthz").status_code == 200  # health stays open


def test_serving_beyond_loopback_without_a_token_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from executor import cli

    monkeypatch.delenv("RANKLAB_EXECUTOR_TOKEN", raising=False)
    assert cli.main(["executor", "serve", "--host", "0.0.0.0", "--port", "1"]) == cli.USAGE_ERROR
    assert "without a token" in capsys.readouterr().err


def test_with_a_token_the_schema_needs_it_and_the_docs_pages_are_not_served() -> None:
    guarded = Executor(ExecutorSettings(token="s3cret"))
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            refused = call(guarded, "GET", "/openapi.json", headers=headers)
            assert refused.status_code == 401, headers
        allowed = {"Authorization": "Bearer s3cret"}
        for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
            assert call(guarded, "GET", path, headers=allowed).status_code == 404, path
        schema = call(guarded, "GET", "/openapi.json", headers=allowed)
        assert schema.status_code == 200
        assert "/v1/runs" in schema.json()["paths"]
    finally:
        guarded.close()


def test_without_a_token_on_loopback_the_docs_stay_open(cold: Executor) -> None:
    assert cold.settings.token is None
    assert call(cold, "GET", "/docs").status_code == 200
    assert "/v1/runs" in call(cold, "GET", "/openapi.json").json()["paths"]

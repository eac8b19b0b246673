"""The app's executor client against a fake transport (httpx.MockTransport): every error path.

The executor is a separate service; whatever it (or the network) does, the client either returns
a RunResult, yields events, or raises ExecutorUnavailable with a message: never anything else.
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
from collections.abc import Callable, Iterator

import httpx
import pytest

from app.executor_client import ExecutorUnavailable, HttpExecutorClient, tls_context
from executor.contract import OutputEvent, RunRequest, RunResult

REQUEST = RunRequest(code="print(1)", nproc=2, timeout_s=5)
RESULT = {
    "status": "ok",
    "duration_ms": 80,
    "ranks": [{"rank": 0, "status": "ok", "exit_code": 0, "stdout": "1\n"}],
}


def client(handler: Callable[[httpx.Request], httpx.Response]) -> HttpExecutorClient:
    return HttpExecutorClient("http://executor.test", transport=httpx.MockTransport(handler))


def sse(*events: tuple[str, dict]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def test_a_run_returns_the_result_and_sends_the_request_as_json() -> None:
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=RESULT)

    result = client(handler).run(REQUEST)
    assert isinstance(result, RunResult) and result.ranks[0].stdout == "1\n"
    assert seen[0]["code"] == "print(1)" and seen[0]["nproc"] == 2


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (503, {"detail": "every slot is busy"}, "executor answered 503: every slot is busy"),
        (422, {"detail": "nproc must be between 1 and 8"}, "422: nproc must be between 1 and 8"),
        (500, "Internal Server Error", "executor answered 500: Internal Server Error"),
    ],
)
def test_an_error_status_becomes_executor_unavailable_with_its_message(
    status: int, body: object, expected: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, dict):
            return httpx.Response(status, json=body)
        return httpx.Response(status, text=str(body))

    with pytest.raises(ExecutorUnavailable, match=expected):
        client(handler).run(REQUEST)
    with pytest.raises(ExecutorUnavailable, match=expected):
        list(client(handler).stream(REQUEST))


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ConnectError("connection refused"),
        httpx.ReadTimeout("timed out"),
        httpx.RemoteProtocolError("peer closed connection"),
    ],
    ids=["refused", "timeout", "dropped"],
)
def test_network_failures_become_executor_unavailable(failure: httpx.HTTPError) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise failure

    with pytest.raises(ExecutorUnavailable, match="executor unreachable"):
        client(handler).run(REQUEST)
    with pytest.raises(ExecutorUnavailable, match="executor unreachable"):
        list(client(handler).stream(REQUEST))


def test_the_stream_yields_outputs_then_the_result() -> None:
    body = sse(
        ("output", {"rank": 0, "stream": "stdout", "text": "1"}),
        ("output", {"rank": 0, "stream": "stdout", "text": "\n"}),
        ("result", RESULT),
    )

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/runs/stream"
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    events = list(client(handler).stream(REQUEST))
    assert [type(event) for event in events] == [OutputEvent, OutputEvent, RunResult]
    assert "".join(e.text for e in events if isinstance(e, OutputEvent)) == "1\n"


class Dropping(httpx.SyncByteStream):
    """A stream that sends one event, then the connection drops."""

    def __iter__(self) -> Iterator[bytes]:
        yield sse(("output", {"rank": 0, "stream": "stdout", "text": "partial"}))
        raise httpx.ReadError("connection reset by peer")


def test_a_stream_that_drops_midway_raises_after_what_arrived() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Dropping(), headers={"content-type": "text/event-stream"})

    arrived: list[object] = []
    with pytest.raises(ExecutorUnavailable, match="connection reset by peer"):
        for event in client(handler).stream(REQUEST):
            arrived.append(event)
    assert [getattr(event, "text", None) for event in arrived] == ["partial"]


def test_health_is_none_when_the_executor_is_down_or_starting() -> None:
    assert client(lambda request: httpx.Response(503, json={"status": "starting"})).health() is None

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    assert client(refused).health() is None
    up = client(lambda request: httpx.Response(200, json={"status": "ok", "cuda_devices": 0}))
    assert up.health() == {"status": "ok", "cuda_devices": 0}


def test_the_token_is_sent_when_the_executor_has_one() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json=RESULT)

    transport = httpx.MockTransport(handler)
    HttpExecutorClient("http://executor.test", transport=transport, token="s3cret").run(REQUEST)
    HttpExecutorClient("http://executor.test", transport=transport).run(REQUEST)
    assert seen == ["Bearer s3cret", None]


def test_health_is_none_when_the_executor_refuses_this_clients_token() -> None:
    # An executor that would answer every run with 401 (a stale one, or someone else's) is not
    # usable: pages must say runs are unavailable rather than offer a button that fails.
    refusing = client(lambda r: httpx.Response(200, json={"status": "ok", "token": "refused"}))
    assert refusing.health() is None
    assert refusing.probe() == {"status": "ok", "token": "refused"}
    accepting = client(lambda r: httpx.Response(200, json={"status": "ok", "token": "accepted"}))
    assert accepting.health() == {"status": "ok", "token": "accepted"}


def test_probe_returns_a_starting_document_and_none_for_garbage() -> None:
    starting = client(lambda request: httpx.Response(503, json={"status": "starting"}))
    assert starting.probe() == {"status": "starting"}
    assert client(lambda request: httpx.Response(200, text="<html>")).probe() is None


def test_runs_share_one_tls_context_and_keep_certificate_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client per run must not rebuild TLS settings per run: httpx loads the whole CA bundle
    for each new client (~20 ms of CPU, paid by every verify run), even over plain http."""
    loads: list[object] = []
    original = ssl.SSLContext.load_verify_locations

    def counting(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(args or kwargs)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)

    class Executor(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps(RESULT).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Executor) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            real = HttpExecutorClient(f"http://127.0.0.1:{server.server_address[1]}")
            results = [real.run(REQUEST) for _ in range(3)]
        finally:
            server.shutdown()
    assert [result.status.value for result in results] == ["ok"] * 3
    assert len(loads) <= 1  # at most the first client's, never one per run
    context = tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname

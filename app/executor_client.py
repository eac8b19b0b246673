"""The app's side of the executor seam: an httpx client with timeouts, never torch.

The executor is a separate service (embedded next to the app by `make run`, on other hosts in
production). If it is down, challenges keep working and pages say runs are unavailable.
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from executor.contract import (
    ExecutorBusy,
    ExecutorUnavailable,
    OutputEvent,
    RunRequest,
    RunResult,
)

__all__ = [
    "ExecutorBusy",
    "ExecutorUnavailable",
    "HttpExecutorClient",
    "NoExecutor",
    "RunEvent",
    "parse_sse",
]

RunEvent = OutputEvent | RunResult


class ExecutorClient(Protocol):
    """What the app needs from an executor; tests inject a fake one."""

    def health(self) -> dict[str, Any] | None:
        """Return the executor's health document when it is up and warm, else None."""
        ...

    def run(self, request: RunRequest) -> RunResult:
        """Run a snippet and return its RunResult."""
        ...

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        """Run a snippet, yielding each rank's output as it arrives, then the RunResult."""
        ...

    def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        """The same, for the event loop: no thread is held while the run lasts; closing the
        iterator hangs up on the executor, which stops the run."""
        ...


@dataclass
class HttpExecutorClient:
    """Talks to the executor's HTTP API (`POST /v1/runs`, `/v1/runs/stream`, `GET /healthz`)."""

    base_url: str
    timeout_s: float = 60.0
    transport: httpx.BaseTransport | None = None
    token: str | None = None  # the executor's shared secret, when it has one
    async_transport: httpx.AsyncBaseTransport | None = None  # tests: a mock for astream

    def _client(self, timeout: httpx.Timeout) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        return httpx.Client(
            base_url=self.base_url, timeout=timeout, transport=self.transport, headers=headers,
            verify=tls_context(),
        )  # fmt: skip

    def _run_timeout(self, request: RunRequest) -> httpx.Timeout:
        # The run's own limit plus time to queue and to fork; connecting must be quick.
        return httpx.Timeout(self.timeout_s + request.timeout_s, connect=2.0)

    def health(self) -> dict[str, Any] | None:
        """Ask /healthz with a short timeout: pages must not stall on a dead executor.

        None unless it is warm and takes this client's token (one that refuses it would refuse
        every run: a stale or foreign executor)."""
        document = self.probe()
        if document is None or document.get("status") != "ok" or document.get("token") == "refused":
            return None
        return document

    def probe(self) -> dict[str, Any] | None:
        """Return /healthz's document, warm or still starting; None if nothing answers it."""
        try:
            with self._client(httpx.Timeout(1.0)) as client:
                response = client.get("/healthz")
            document = response.json()
        except (httpx.HTTPError, ValueError):
            return None
        return document if isinstance(document, dict) else None

    def run(self, request: RunRequest) -> RunResult:
        """Run a snippet and return the RunResult."""
        try:
            with self._client(self._run_timeout(request)) as client:
                response = client.post("/v1/runs", json=request.model_dump(mode="json"))
        except httpx.HTTPError as error:
            raise ExecutorUnavailable(f"executor unreachable: {error}") from error
        _raise_for_status(response)
        return RunResult.model_validate(response.json())

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        """Run a snippet over SSE, yielding OutputEvents as they arrive, then the RunResult."""
        try:
            with (
                self._client(self._run_timeout(request)) as client,
                client.stream(
                    "POST", "/v1/runs/stream", json=request.model_dump(mode="json")
                ) as response,
            ):
                if response.status_code != 200:
                    response.read()
                    _raise_for_status(response)
                yield from parse_sse(response.iter_lines())
        except httpx.HTTPError as error:
            raise ExecutorUnavailable(f"executor unreachable: {error}") from error

    async def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        """Run a snippet over SSE without a thread: each event as it arrives, then the result."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        transport = self.async_transport
        try:
            async with (
                httpx.AsyncClient(
                    base_url=self.base_url,
                    timeout=self._run_timeout(request),
                    headers=headers,
                    transport=transport,
                    verify=tls_context(),
                ) as client,
                client.stream(
                    "POST", "/v1/runs/stream", json=request.model_dump(mode="json")
                ) as response,
            ):
                if response.status_code != 200:
                    await response.aread()
                    _raise_for_status(response)
                parser = SseParser()
                async for line in response.aiter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        yield event
        except httpx.HTTPError as error:
            raise ExecutorUnavailable(f"executor unreachable: {error}") from error


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings of every client this process makes, built once.

    A client per request is simple (no connection state shared between threads), but httpx
    builds a fresh SSL context for each, loading the whole CA bundle: ~20 ms of CPU per run
    even over plain http, which verify (hundreds of runs) and the app pay on every run. The
    context is what httpx would build (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR as
    the process started with), verification on; one context serves any number of clients.
    """
    return httpx.create_ssl_context()


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        message = f"executor answered {response.status_code}: {detail}"
        if response.status_code == 503 and "busy" in str(detail):
            raise ExecutorBusy(message)
        raise ExecutorUnavailable(message)


class SseParser:
    """Reads the executor's SSE line by line: an OutputEvent or the RunResult per frame."""

    def __init__(self) -> None:
        self.event, self.data = "message", list[str]()

    def feed(self, line: str) -> RunEvent | None:
        """Take one line; return the event a blank line completes, if any."""
        found: RunEvent | None = None
        if line == "":
            if self.data:
                payload = json.loads("\n".join(self.data))
                if self.event == "output":
                    found = OutputEvent.model_validate(payload)
                elif self.event == "result":
                    found = RunResult.model_validate(payload)
            self.event, self.data = "message", []
        elif line.startswith("event:"):
            self.event = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].lstrip())
        return found


def parse_sse(lines: Iterator[str]) -> Iterator[RunEvent]:
    """Turn the executor's SSE lines into OutputEvents and the final RunResult."""
    parser = SseParser()
    for line in lines:
        event = parser.feed(line)
        if event is not None:
            yield event


@dataclass
class NoExecutor:
    """Used when no executor URL is configured: runs are simply unavailable."""

    def health(self) -> dict[str, Any] | None:
        """Return None: there is no executor."""
        return None

    def run(self, request: RunRequest) -> RunResult:
        """Refuse: there is no executor."""
        raise ExecutorUnavailable("no executor is configured")

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        """Refuse: there is no executor."""
        raise ExecutorUnavailable("no executor is configured")

    async def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        """Refuse: there is no executor."""
        raise ExecutorUnavailable("no executor is configured")
        yield  # an async generator, like the real one

"""The app's side of the executor seam: an httpx client with timeouts, never torch.

The executor is a separate service (embedded next to the app by `make run`, on other hosts in
production). If it is down, challenges keep working and pages say runs are unavailable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import httpx


class ExecutorClient(Protocol):
    """What the app needs from an executor; tests inject a fake one."""

    def available(self) -> bool:
        """Return whether the executor answers its health check."""
        ...

    def run(self, code: str, nproc: int, backend: str, timeout_s: float) -> dict[str, Any]:
        """Run a snippet and return the RunResult as a dict."""
        ...


@dataclass
class HttpExecutorClient:
    """Talks to the executor's HTTP API (`POST /v1/runs`, `GET /healthz`)."""

    base_url: str
    timeout_s: float = 60.0
    transport: httpx.BaseTransport | None = None

    def _client(self, timeout: httpx.Timeout) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=timeout, transport=self.transport)

    def available(self) -> bool:
        """Return whether the executor is up and warm (a short timeout: pages must not stall)."""
        try:
            with self._client(httpx.Timeout(0.5)) as client:
                return client.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    def run(self, code: str, nproc: int, backend: str, timeout_s: float) -> dict[str, Any]:
        """Run a snippet; the HTTP timeout allows for the run's own limit plus queueing."""
        payload = {"code": code, "nproc": nproc, "backend": backend, "timeout_s": timeout_s}
        timeout = httpx.Timeout(self.timeout_s + timeout_s, connect=2.0)
        with self._client(timeout) as client:
            response = client.post("/v1/runs", json=payload)
            response.raise_for_status()
            result: dict[str, Any] = response.json()
            return result


@dataclass
class NoExecutor:
    """Used when no executor URL is configured: runs are simply unavailable."""

    def available(self) -> bool:
        """Return False: there is no executor."""
        return False

    def run(self, code: str, nproc: int, backend: str, timeout_s: float) -> dict[str, Any]:
        """Refuse: there is no executor."""
        raise httpx.ConnectError("no executor is configured")

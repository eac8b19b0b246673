"""A fake executor at the seam: canned events, and a record of what it was asked to run."""

from __future__ import annotations

import ast
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from app.executor_client import ExecutorUnavailable, RunEvent
from executor.contract import (
    Environment,
    OutputEvent,
    RankResult,
    RunRequest,
    RunResult,
)


def canned_result(*stdouts: str) -> RunResult:
    """A successful run in which rank i printed stdouts[i]."""
    return RunResult(
        status="ok",
        duration_ms=97,
        ranks=[
            RankResult(rank=i, status="ok", exit_code=0, stdout=text)
            for i, text in enumerate(stdouts)
        ],
        environment=Environment(
            torch="2.13.0+cpu", backend="gloo", device="cpu", nproc=len(stdouts), python="3.11.7"
        ),
        observed_at="2026-11-22T09:00:00Z",
    )


@dataclass
class FakeExecutor:
    """Answers like the executor service would, without running anything."""

    up: bool = True
    requests: list[RunRequest] = field(default_factory=list)

    def health(self) -> dict[str, Any] | None:
        return {"status": "ok", "torch": "2.13.0+cpu"} if self.up else None

    def run(self, request: RunRequest) -> RunResult:
        self.requests.append(request)
        if not self.up:
            raise ExecutorUnavailable("down")
        return canned_result(*["1.0\n"] * request.nproc)

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        self.requests.append(request)
        if not self.up:
            raise ExecutorUnavailable("down")
        for rank in range(request.nproc):
            yield OutputEvent(rank=rank, stream="stdout", text="1.0\n")
        yield canned_result(*["1.0\n"] * request.nproc)

    async def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        for event in self.stream(request):
            yield event


@dataclass
class GatedExecutor(FakeExecutor):
    """A fake executor whose runs wait at a gate, so a test can look at work mid-run."""

    entered: threading.Event = field(default_factory=threading.Event)
    gate: threading.Event = field(default_factory=threading.Event)
    wait_s: float = 10.0

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        self.entered.set()
        if not self.gate.wait(self.wait_s):
            raise ExecutorUnavailable("the test never opened the gate")
        yield from super().stream(request)


def printed(code: str) -> str:
    """What a snippet's literal `print(...)` calls print, one line each ("1.0\\n" if none)."""
    lines = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            try:
                lines.append(" ".join(str(ast.literal_eval(arg)) for arg in node.args))
            except ValueError:
                continue
    return "".join(f"{line}\n" for line in lines) if lines else "1.0\n"


@dataclass
class PrintingExecutor(FakeExecutor):
    """A fake whose every rank prints what the snippet's literal `print(...)` calls print, so
    that a Verify can pass one snippet and fail another without running anything."""

    def run(self, request: RunRequest) -> RunResult:
        self.requests.append(request)
        return canned_result(*[printed(request.code)] * request.nproc)

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        yield self.run(request)

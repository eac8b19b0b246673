"""Driving the real executor from tests: the canary secret and a blocking `run`.

Imported by tests/conftest.py for every test, so the executor is imported only when used.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from executor.contract import Launcher, OutputEvent, RunRequest, RunResult
    from executor.runner import Executor

# Put in the environment the executor is started from (tests/conftest.py): no rank may see it.
CANARY = "ranklab-canary-7f3c9e"


def run(
    runner: Executor,
    code: str,
    nproc: int = 2,
    timeout_s: float = 10.0,
    launcher: Launcher = "torchrun",
) -> RunResult:
    """Run code for real (never from the cache) and return the result."""
    from executor.contract import RunRequest

    request = RunRequest(
        code=code, nproc=nproc, timeout_s=timeout_s, launcher=launcher, use_cache=False
    )
    return asyncio.run(runner.run(request))


def streamed(runner: Executor, request: RunRequest) -> tuple[list[OutputEvent], RunResult, float]:
    """Run a request as the stream does: its output events, its result, and the seconds the
    whole took."""
    import time

    from executor.contract import OutputEvent, RunResult

    async def follow() -> tuple[list[OutputEvent], RunResult, float]:
        events: list[OutputEvent] = []
        result: RunResult | None = None
        started = time.monotonic()
        async for event in await runner.open(request):
            if isinstance(event, OutputEvent):
                events.append(event)
            elif isinstance(event, RunResult):
                result = event
        assert result is not None
        return events, result, time.monotonic() - started

    return asyncio.run(follow())

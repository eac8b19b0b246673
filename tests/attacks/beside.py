"""Two real runs at once on one executor: the first runs until it prints a marker on every rank,
then the second runs beside it to its end; both results come back."""

from __future__ import annotations

import asyncio

from executor.contract import OutputEvent, RunRequest, RunResult
from executor.runner import Executor


def beside(
    runner: Executor, first: RunRequest, marker: str, second: RunRequest
) -> tuple[RunResult, RunResult]:
    """Run `second` once every rank (process) of `first` has printed `marker`; return both."""

    async def both() -> tuple[RunResult, RunResult]:
        ready = asyncio.Event()
        processes = 1 if first.launcher == "python" else first.nproc
        seen: set[int] = set()

        async def follow_first() -> RunResult:
            result: RunResult | None = None
            async for event in await runner.open(first):
                if isinstance(event, OutputEvent) and marker in event.text:
                    seen.add(event.rank)
                    if len(seen) == processes:
                        ready.set()
                elif isinstance(event, RunResult):
                    result = event
            ready.set()  # ended without the marker: the check on its result says why
            assert result is not None
            return result

        first_task = asyncio.create_task(follow_first())
        await ready.wait()
        assert not first_task.done(), f"the first run ended early: {await first_task}"
        second_result = await runner.run(second)
        return await first_task, second_result

    return asyncio.run(both())

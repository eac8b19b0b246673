"""Stop: a client that stops reading a run's stream (the learner pressed Stop, or left) ends the
run at once, not at its deadline, and leaves no process behind."""

from __future__ import annotations

import asyncio
import time

import pytest

from executor.contract import OutputEvent, RunRequest, RunStatus
from executor.runner import Executor
from tests.executor.test_hostile import NORMAL, leftover_processes
from tests.support.executor import run

pytestmark = pytest.mark.executor

SPIN = "print('started', flush=True)\nwhile True:\n    pass\n"  # silent after its first line


def test_closing_the_stream_kills_a_silent_busy_run_at_once(sandboxed: Executor) -> None:
    assert sandboxed.pool._process is not None
    zygote = sandboxed.pool._process.pid

    async def start_then_stop() -> float:
        request = RunRequest(code=SPIN, nproc=2, timeout_s=50, use_cache=False)
        events = await sandboxed.open(request)
        async for event in events:
            if isinstance(event, OutputEvent) and "started" in event.text:
                break
        assert leftover_processes(zygote) != []  # the ranks are spinning
        stopped = time.monotonic()
        await events.aclose()  # type: ignore[attr-defined]
        return stopped

    stopped = asyncio.run(start_then_stop())
    while leftover_processes(zygote) and time.monotonic() - stopped < 5:
        time.sleep(0.05)
    # Gone at once (0.2 s here), not at the 50 s deadline; before this, the ranks spun on for
    # 10 s or more. The slack is for a loaded machine.
    assert leftover_processes(zygote) == []
    assert time.monotonic() - stopped < 5
    after = run(sandboxed, NORMAL, nproc=2)
    assert after.status is RunStatus.OK, after

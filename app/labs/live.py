"""Lab runs in flight: each is an asyncio task relaying the executor's stream into a buffer
that any number of SSE readers follow, from the start or from the last event they saw
(Last-Event-ID), so a dropped connection resumes where it was. No thread is held while a run
lasts. Stopping cancels the task, which hangs up on the executor, which kills the ranks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

# A finished run's buffer stays this long for readers that reconnect; later they replay the
# stored result.
KEEP_FINISHED_S = 600.0

Event = tuple[str, dict[str, Any]]  # (SSE event name, JSON payload)


@dataclass
class LiveRun:
    """One run's events so far, and whether it has ended."""

    run_id: int
    user_id: int
    events: list[Event] = field(default_factory=list)
    done: bool = False
    ended_at: float | None = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    task: asyncio.Task[None] | None = None

    async def add(self, name: str, payload: dict[str, Any]) -> None:
        """Append an event and wake the readers."""
        async with self.changed:
            self.events.append((name, payload))
            self.changed.notify_all()

    async def finish(self) -> None:
        """Mark the run ended and wake the readers."""
        async with self.changed:
            self.done, self.ended_at = True, time.monotonic()
            self.changed.notify_all()

    async def follow(self, after: int) -> AsyncIterator[tuple[int, Event]]:
        """Yield (index, event) from index `after + 1` on, as they come, until the end."""
        index = after + 1
        while True:
            async with self.changed:
                while index >= len(self.events) and not self.done:
                    await self.changed.wait()
                fresh = self.events[index:]
                done = self.done
            for offset, event in enumerate(fresh):
                yield index + offset, event
            index += len(fresh)
            if done and index >= len(self.events):
                return


@dataclass
class LiveRuns:
    """The runs in flight in this process (and recently finished ones), by run id."""

    runs: dict[int, LiveRun] = field(default_factory=dict)

    def start(
        self, run_id: int, user_id: int, drive: Callable[[LiveRun], Awaitable[None]]
    ) -> LiveRun:
        """Begin driving a run in the background."""
        self._forget_old()
        live = LiveRun(run_id, user_id)

        async def wrapped() -> None:
            try:
                await drive(live)
            finally:
                await live.finish()

        live.task = asyncio.get_running_loop().create_task(wrapped(), name=f"lab-run-{run_id}")
        self.runs[run_id] = live
        return live

    def get(self, run_id: int) -> LiveRun | None:
        """The run, if this process drives it (or did recently)."""
        return self.runs.get(run_id)

    def stop(self, run_id: int) -> bool:
        """Cancel a run in flight; False if it is not running here."""
        live = self.runs.get(run_id)
        if live is None or live.done or live.task is None:
            return False
        live.task.cancel()
        return True

    async def close(self) -> None:
        """Stop every run (the app is shutting down)."""
        tasks = [live.task for live in self.runs.values() if live.task and not live.done]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _forget_old(self) -> None:
        now = time.monotonic()
        for run_id, live in list(self.runs.items()):
            if live.done and live.ended_at is not None and now - live.ended_at > KEEP_FINISHED_S:
                del self.runs[run_id]

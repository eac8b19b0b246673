"""Lab runs in flight: the seam between the task that drives a run and its SSE readers.

A run's driver (`app.labs.routes._drive`) writes events (queued, output, result, unavailable,
stopped, checks) to a `RunLog`; readers follow them from the start or from the last event they
saw (Last-Event-ID), so a dropped connection resumes where it was, and the log ends with `end`.
`LiveRuns` starts, follows and stops runs. Two implementations:

- `MemoryLiveRuns` (here): one process. Each run is an asyncio task relaying the executor's
  stream into a buffer in this process; Stop cancels the task, which hangs up on the executor,
  which kills the ranks. The embedded executor's default: it serves one app process.
- `app.labs.live_redis.RedisLiveRuns`: with the job bus, the log is a Redis stream that any app
  process can follow and stop, whichever one drives the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

import anyio

from app.errors import TooManyRequests, Unavailable
from app.fanout import READERS, READERS_PER_STREAM, TooManyReaders, admit

# A finished run's buffer stays this long for readers that reconnect; later they replay the
# stored result.
KEEP_FINISHED_S = 600.0
STOP_WAIT_S = 10.0  # Stop answers once the run has ended, or after this long

Event = tuple[str, dict[str, Any]]  # (SSE event name, JSON payload)
# (SSE id, event name, payload); the id is None for a notice that is not part of the run's
# log (the reader keeps its place, and resumes from its last id).
Frame = tuple[int | None, str, dict[str, Any]]
Frames = AsyncGenerator[Frame, None]


class RunLog(Protocol):
    """Where a run's driver writes its events."""

    async def add(self, name: str, payload: dict[str, Any]) -> None:
        """Append an event for every reader."""
        ...


Drive = Callable[[RunLog], Awaitable[None]]


class StopOutcome(Enum):
    """What a Stop found."""

    STOPPED = "stopped"  # it was going: it has stopped (or Stop waited STOP_WAIT_S)
    ENDED = "ended"  # it had already ended
    UNKNOWN = "unknown"  # no run of this learner's is known by that id


class LiveRuns(Protocol):
    """Lab runs in flight: start one, follow one's events, stop one."""

    async def start(self, run_id: int, user_id: int, drive: Drive) -> None:
        """Begin driving a run in the background; readers may follow it once this returns."""
        ...

    async def follow(self, run_id: int, user_id: int, after: int) -> Frames | None:
        """The learner's run's frames after id `after`, to `end`; None when no live log of
        theirs is known (the caller replays the stored run)."""
        ...

    async def stop(self, run_id: int, user_id: int) -> StopOutcome:
        """Stop the learner's run and wait (up to STOP_WAIT_S) for it to end."""
        ...

    async def close(self) -> None:
        """Stop every run this process drives (the app is shutting down)."""
        ...


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
class MemoryLiveRuns:
    """The runs in flight in this process (and recently finished ones), by run id, and their
    readers, capped as on the job bus (429 past a run's cap, 503 past the process's)."""

    runs: dict[int, LiveRun] = field(default_factory=dict)
    readers_per_run: int = READERS_PER_STREAM  # SSE readers of one run
    readers: int = READERS  # SSE readers in this process, all lab runs together
    _following: dict[int, int] = field(default_factory=dict)  # readers now, by run id

    async def start(self, run_id: int, user_id: int, drive: Drive) -> None:
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

    def get(self, run_id: int) -> LiveRun | None:
        """The run, if this process drives it (or did recently)."""
        return self.runs.get(run_id)

    async def follow(self, run_id: int, user_id: int, after: int) -> Frames | None:
        """The run's frames after `after`, then `end`; None if it is not the learner's here."""
        live = self.runs.get(run_id)
        if live is None or live.user_id != user_id:
            return None
        if not live.done:  # a finished run's frames are a moment's replay: no reader to count
            try:
                admit(
                    self._following.get(run_id, 0),
                    sum(self._following.values()),
                    self.readers_per_run,
                    self.readers,
                )
            except TooManyReaders as error:  # a crowded run: 429; a crowded process: 503
                refusal = Unavailable if error.whole_process else TooManyRequests
                raise refusal(str(error)) from error
            self._following[run_id] = self._following.get(run_id, 0) + 1
        return self._frames(live, after, counted=not live.done)

    async def _frames(self, live: LiveRun, after: int, counted: bool) -> Frames:
        try:
            async for index, (name, payload) in live.follow(after):
                yield index, name, payload
            yield len(live.events), "end", {}
        finally:
            if counted:
                left = self._following.pop(live.run_id) - 1
                if left:
                    self._following[live.run_id] = left

    async def stop(self, run_id: int, user_id: int) -> StopOutcome:
        """Cancel the learner's run in flight, and wait for its driver to record it."""
        live = self.runs.get(run_id)
        if live is None or live.user_id != user_id:
            return StopOutcome.UNKNOWN
        if live.done or live.task is None:
            return StopOutcome.ENDED
        live.task.cancel()
        with anyio.move_on_after(STOP_WAIT_S):
            while not live.done:
                await anyio.sleep(0.05)
        return StopOutcome.STOPPED

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

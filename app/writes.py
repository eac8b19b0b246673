"""The write queue: a request's writes wait their turn here, in order, for a bounded time.

A class pressing Start together sends hundreds of writes within seconds. Each is short (a few
milliseconds), so they are served one after the other, first come first served, while pages go
on being read beside them: reads never wait here.

- SQLite: one writer per process, on the event loop itself, holding the file's write lock
  (app.write_lock) for a turn of queued writes. A worker thread would pay for every one of a
  transaction's driver calls in the GIL's switch interval (up to 5 ms each while the loop is
  busy), holding the lock all along; inline, a transaction costs what its statements cost.
  The turn's commits share one flush to disk (a group commit) made before any of them is
  answered: as durable as SQLite's synchronous=FULL, for one fsync a turn instead of one a
  commit, during which the loop serves nothing.
- PostgreSQL: a few writes at once (`lanes`), each a task of the loop with a connection of
  its own (app.db.LoopEngines.writes), its round trips awaited: on a worker thread each would
  end waiting for the GIL, as above.

A write that would wait longer than `max_wait_s` is refused at once with Busy (503 and
Retry-After), before anything of it ran: nothing is half-stored, and sending it again is safe
(answers carry a submission token besides, app.attempts.service.submit). A request never hangs
for tens of seconds in a busy handler or a pool.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlalchemy.util import greenlet_spawn
from sqlmodel import Session

from app.db import loop_engines, then_end, write_lock
from app.errors import Busy
from app.metrics import WRITE_WAIT_SECONDS, WRITES_REFUSED, WRITES_WAITING

T = TypeVar("T")
# How long the SQLite writer runs queued writes back to back before letting the loop serve
# pages again (and another worker process take the file's lock).
TURN_S = 0.05
# The least a write may wait for its turn, however long its request waited to be let in
# (app.admission): a lane about to be free should not make it a 503.
MIN_WAIT_S = 0.1

BUSY_MESSAGE = (
    "The whole class is pressing buttons at this very moment, and yours could not be taken in "
    "time. Nothing was recorded: this page sends it again by itself in a moment."
)


@dataclass
class _Job:
    """One request's writes, waiting for the writer; its future gets the outcome."""

    session: Session
    work: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future[Any]
    begun: bool = False  # once begun, it runs to its end whatever the wait
    queued_at: float = 0.0  # time.monotonic() when it joined the queue


class WriteQueue:
    """One app's writes, in order: `await queue.run(session, work, *args)`.

    Writers are tasks of the event loop (one per lane; SQLite has one) that take the queued
    writes one after the other: a finished write hands over to the next without a trip through
    the loop's queue of ready tasks, which under load costs more than the write itself.
    """

    def __init__(self, engine: Engine, lanes: int, max_wait_s: float) -> None:
        self.lock = write_lock(engine)
        self.lanes = 1 if self.lock is not None else lanes
        self.max_wait_s = max_wait_s
        self.refused = 0
        self._jobs: deque[_Job] = deque()
        self._service_s = 0.005  # a write's time, averaged: estimates the wait
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Event | None = None
        self._writers: set[asyncio.Task[None]] = set()
        self._stalled_since: float | None = None  # the writer waits for SQLite's lock since

    @property
    def waiting(self) -> int:
        """Writes queued, not yet begun."""
        return len(self._jobs)

    def expected_wait_s(self) -> float:
        """How long a write arriving now would wait, from the queue and recent writes (and
        how long the writer has been waiting for SQLite's lock, if it is)."""
        queued = (len(self._jobs) + 1) * self._service_s / self.lanes
        stalled = self._stalled_since
        return queued + (time.monotonic() - stalled if stalled is not None else 0.0)

    def _busy(self) -> Busy:
        self.refused += 1
        WRITES_REFUSED.inc()
        return Busy(BUSY_MESSAGE, retry_after=max(1, math.ceil(self.expected_wait_s())))

    async def run(
        self, session: Session, work: Callable[..., T], *args: Any, waited_s: float = 0.0
    ) -> T:
        """Run `work(*args)`, which writes through `session`, in its turn; commit after it (roll
        back if it raises). Busy, with nothing run, if its turn would not come in time: within
        max_wait_s of the request's arrival, `waited_s` ago (its wait for admission,
        app.admission), though never less than MIN_WAIT_S."""
        max_wait_s = max(self.max_wait_s - waited_s, min(self.max_wait_s, MIN_WAIT_S))
        if self._jobs and self.expected_wait_s() > max_wait_s:
            raise self._busy()  # fail fast: the queue ahead is longer than the wait allowed
        ready = self._start_writers()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        job = _Job(session, work, args, future, queued_at=time.monotonic())
        self._jobs.append(job)
        WRITES_WAITING.inc()
        ready.set()
        try:
            # Shielded: a time-out must not cancel a write that has begun (on a thread).
            return await asyncio.wait_for(asyncio.shield(future), max_wait_s)
        except TimeoutError:
            if job.begun:  # too late to refuse it: it is being stored, wait for its outcome
                return await future
            future.cancel()  # nothing of it ran: it leaves the queue at once
            try:
                self._jobs.remove(job)  # else it would count in the next one's expected wait
            except ValueError:  # the writer took it meanwhile, and skips it
                pass
            else:
                WRITES_WAITING.dec()
            raise self._busy() from None

    def _start_writers(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._ready is None:
            # Per loop: a test client without a lifespan runs each request on a loop of its
            # own, whose end cancels its writers (so does the app's shutdown).
            self._loop, self._ready, self._writers = loop, asyncio.Event(), set()
            for _ in range(self.lanes):
                writer = loop.create_task(self._write(self._ready), name="ranklab-writer")
                self._writers.add(writer)
        return self._ready

    async def _write(self, ready: asyncio.Event) -> None:
        while True:
            if not self._jobs:
                ready.clear()
                await ready.wait()
                continue
            if self.lock is None:  # PostgreSQL: one write at a time per lane, on a thread
                job = self._take_next()
                if self._due(job):
                    with anyio.CancelScope(shield=True):
                        await self._run_on_lane(job)
                continue
            await self._take_lock()
            done: list[tuple[_Job, Any, Exception | None]] = []
            try:
                # Back to back while this turn lasts, holding SQLite's write lock throughout;
                # then the loop serves pages (and the other processes their writes) a while.
                # Their commits share one flush to disk (a group commit), made before any of
                # their requests is answered.
                turn_ends = time.monotonic() + TURN_S
                with self.lock.group():
                    while self._jobs and time.monotonic() < turn_ends:
                        job = self._take_next()
                        if self._due(job):
                            done.append(self._run_here(job))
            except OSError as refused:  # the disk refused the flush: none is answered ok
                done = [(job, None, refused) for job, _, _ in done]
            finally:
                self.lock.release()
            for job, result, error in done:
                if job.future.done():
                    continue
                if error is None:
                    job.future.set_result(result)
                else:
                    job.future.set_exception(error)
            await asyncio.sleep(0)

    def _take_next(self) -> _Job:
        job = self._jobs.popleft()
        WRITES_WAITING.dec()
        return job

    def _due(self, job: _Job) -> bool:
        """Whether to run the job: not once its request gave up its turn (it waited too long,
        or the client went away); then it begins, and nothing can refuse it any more."""
        if job.future.done():
            return False
        job.begun = True
        WRITE_WAIT_SECONDS.observe(time.monotonic() - job.queued_at)
        return True

    def _run_here(self, job: _Job) -> tuple[_Job, Any, Exception | None]:
        began = time.monotonic()
        try:
            outcome: tuple[_Job, Any, Exception | None] = (
                job,
                then_end(job.session, job.work, *job.args),
                None,
            )
        except Exception as error:  # the request's own error (a 409, a 404): its to raise
            outcome = (job, None, error)
        self._service_s = 0.8 * self._service_s + 0.2 * (time.monotonic() - began)
        return outcome

    async def _run_on_lane(self, job: _Job) -> None:
        began = time.monotonic()
        try:
            result = await _run_awaiting(job.session, job.work, *job.args)
        except Exception as error:
            if not job.future.done():
                job.future.set_exception(error)
        else:
            if not job.future.done():
                job.future.set_result(result)
        self._service_s = 0.8 * self._service_s + 0.2 * (time.monotonic() - began)

    async def _take_lock(self) -> None:
        """Hold SQLite's write lock for this (the loop's) thread; if a worker thread or another
        process holds it now, wait in a worker thread, never on the loop."""
        assert self.lock is not None
        if self.lock.try_acquire():
            return
        loop_thread = threading.get_ident()
        with anyio.CancelScope(shield=True):  # taken in the thread: it must be let go here
            self._stalled_since = time.monotonic()
            try:
                while not await anyio.to_thread.run_sync(self.lock.acquire_for, loop_thread, 1.0):
                    pass  # held long (a thread's slow write): queued writes give up meanwhile
            finally:
                self._stalled_since = None


async def _run_awaiting(session: Session, work: Callable[..., T], *args: Any) -> T:
    """`then_end(session, work, *args)` where the database's round trips are awaited: on the
    engine's LoopEngines.writes, the session bound to it for the while; on a worker thread
    where there are none (or the session is in a transaction on its engine already)."""
    engine = session.get_bind()
    found = loop_engines(engine)  # type: ignore[arg-type]
    if found is None or session.in_transaction():
        return await anyio.to_thread.run_sync(then_end, session, work, *args)
    session.bind = found.writes
    try:
        return await greenlet_spawn(then_end, session, work, *args)
    finally:
        session.bind = engine

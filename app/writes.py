"""The write queue: a request's writes wait their turn here, in order, for a bounded time.

A class pressing Start together sends hundreds of writes within seconds. Each is short (a few
milliseconds), so they are served one after the other, first come first served, while pages go
on being read beside them: reads never wait here.

- SQLite: one writer per process, on the event loop itself, holding the file's write lock
  (app.write_lock) for its transaction. A worker thread would pay for every one of the
  transaction's driver calls in the GIL's switch interval (up to 5 ms each while the loop is
  busy), holding the lock all along; inline, a transaction costs what its statements cost.
- PostgreSQL: a few writes at once (`lanes`), each on a worker thread with one pooled
  connection; the pool keeps a connection per worker thread, so none waits for one.

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
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.db import write_lock
from app.errors import Busy

T = TypeVar("T")

BUSY_MESSAGE = (
    "Many learners are sending answers at this very moment, and yours could not be taken in "
    "time. Nothing was recorded: this page sends it again by itself in a moment."
)


class WriteQueue:
    """One app's writes, in order: `await queue.run(session, work, *args)`."""

    def __init__(self, engine: Engine, lanes: int, max_wait_s: float) -> None:
        self.lock = write_lock(engine)
        self.lanes = 1 if self.lock is not None else lanes
        self.max_wait_s = max_wait_s
        self.waiting = 0
        self.refused = 0
        self._service_s = 0.005  # a write's time in its lane, averaged (estimates the wait)
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._slots is None:
            # One per loop: a test client without a lifespan runs each request on a new one.
            self._slots, self._loop = asyncio.Semaphore(self.lanes), loop
        return self._slots

    def expected_wait_s(self) -> float:
        """How long a write arriving now would wait, from the queue and recent writes."""
        return (self.waiting + 1) * self._service_s / self.lanes

    def _busy(self) -> Busy:
        self.refused += 1
        return Busy(BUSY_MESSAGE, retry_after=max(1, math.ceil(self.expected_wait_s())))

    async def run(self, session: Session, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)`, which writes through `session`, in its turn; commit after it (roll
        back if it raises). Busy, with nothing run, if its turn would not come in time."""
        arrived = time.monotonic()
        slots = self._semaphore()
        if slots.locked() and self.expected_wait_s() > self.max_wait_s:
            raise self._busy()  # fail fast: the queue ahead is longer than the wait allowed
        self.waiting += 1
        try:
            await asyncio.wait_for(slots.acquire(), self.max_wait_s)
        except TimeoutError:
            raise self._busy() from None
        finally:
            self.waiting -= 1
        began = time.monotonic()
        try:
            if self.lock is None:  # PostgreSQL: on a worker thread
                return await anyio.to_thread.run_sync(_then_end, session, work, *args)
            await self._take_lock(arrived)
            try:
                return _then_end(session, work, *args)
            finally:
                self.lock.release()
        finally:
            slots.release()
            self._service_s = 0.8 * self._service_s + 0.2 * (time.monotonic() - began)

    async def _take_lock(self, arrived: float) -> None:
        """Hold SQLite's write lock for this (the loop's) thread; if a worker thread or another
        process holds it now, wait in a worker thread, never on the loop."""
        assert self.lock is not None
        if self.lock.try_acquire():
            return
        remaining = max(0.1, self.max_wait_s - (time.monotonic() - arrived))
        loop_thread = threading.get_ident()
        with anyio.CancelScope(shield=True):  # taken in the thread: it must be let go here
            taken = await anyio.to_thread.run_sync(self.lock.acquire_for, loop_thread, remaining)
        if not taken:
            raise self._busy()


def _then_end(session: Session, work: Callable[..., T], *args: Any) -> T:
    try:
        result = work(*args)
    except BaseException:
        session.rollback()
        raise
    session.commit()
    return result

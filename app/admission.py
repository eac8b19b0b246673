"""Admission: how many of a class's requests a worker works on at once; the rest wait in order.

A class pressing Start together sends a worker hundreds of requests within a second or two.
Each is a few milliseconds of work, but on PostgreSQL it is also a few round trips to the
database, and between them the request waits for a turn of the event loop. Started all at
once, every request shares the loop with every other: each of their round trips waits for
the whole crowd's turns, so they all finish late together (processor sharing), and the
answers among them wait in the write queue (app.writes) until some are refused. Let in a few
at a time, first come first served, a request's round trips wait only for the few beside it:
each is done in a few milliseconds, and those behind it start sooner than they would have
finished.

`make bench-class` (PostgreSQL, two workers, 500 learners, docs/benchmarks.md), with a first
version of this around the whole app, measured each request's p99 at 665 to 1,214 ms letting
every request in (3 runs), 347 to 668 ms letting 16 in at a time per worker (5 runs), 449 to
582 ms with 24 or 32 (5 runs), and 407 and 958 ms with 8: too few at times, as requests
waiting for the database or a write lane then leave the loop idle. This version, on the hot
routes only: 497 to 684 ms in 7 runs, alternated with the code before it (711 ms to 1.45 s).

The hot pages and forms (app.deps.page_route, form_route) take a turn here, after their
request's body has arrived (a slow sender waits outside) and after the time it arrived was
read, so an answer is judged at its arrival whatever its wait here (app.attempts.arrival).
Admission never refuses: a request that waited `max_wait_s` goes in anyway, and refusing is
the write queue's (503 and Retry-After), which counts the time waited here in its own bound.
On SQLite there is no limit unless one is set (`admission_limit`).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.engine import Engine

from app.metrics import ADMISSION_WAIT_SECONDS

# How many hot requests a process works on at once on PostgreSQL, unless set.
POSTGRESQL_LIMIT = 16


def admission_limit(engine: Engine) -> int | None:
    """The limit for this database, unless set: POSTGRESQL_LIMIT on a server database, none on
    SQLite. There, a page's reads are plain calls on the loop (they never wait: no request
    waits for another's between them), and writes are the one writer's turns, of all the
    writes queued, with one flush to disk a turn: a limit only made the turns smaller. Run
    alternately at 500 learners on one SQLite worker, p99 227, 311 and 280 ms with 16 at a
    time against 270, 163 and 249 ms without, at 1.10-1.16 against 0.98-1.04 ms of CPU a
    request."""
    return None if engine.dialect.name == "sqlite" else POSTGRESQL_LIMIT


class Admission:
    """At most `limit` requests in at once, the others let in first come, first served;
    every one at once where `limit` is None."""

    def __init__(self, limit: int | None, max_wait_s: float) -> None:
        self.limit = limit
        self.max_wait_s = max_wait_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inside = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def inside(self) -> int:
        """Requests let in and not yet out."""
        return self._inside

    @property
    def waiting(self) -> int:
        """Requests waiting for their turn."""
        return sum(not future.done() for future in self._waiting)

    def _on_this_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # Per loop: a test client without a lifespan runs each request on a loop of its
            # own, as app.writes' writers note; nothing waits across loops.
            self._loop, self._inside, self._waiting = loop, 0, deque()
        return loop

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[float]:
        """Wait for this request's turn (or max_wait_s), hold it while inside; yields the
        seconds it waited."""
        if self.limit is None:
            yield 0.0
            return
        loop = self._on_this_loop()
        waited = 0.0
        if self._inside >= self.limit or self._waiting:
            began = time.perf_counter()
            future: asyncio.Future[None] = loop.create_future()
            self._waiting.append(future)
            try:
                await asyncio.wait_for(asyncio.shield(future), self.max_wait_s)
            except TimeoutError:
                if not future.done():
                    future.cancel()  # waited long enough: in anyway, over the limit
                    self._inside += 1
            except BaseException:
                if future.done() and not future.cancelled():
                    self._let_next_in()  # its turn came as it was cancelled: pass it on
                else:
                    future.cancel()
                raise
            waited = time.perf_counter() - began
            ADMISSION_WAIT_SECONDS.observe(waited)
        else:
            self._inside += 1
        try:
            yield waited
        finally:
            self._let_next_in()

    def _let_next_in(self) -> None:
        """One request is out: the next waiting one takes its place (it counts as inside
        from now on), else there is one place more."""
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():  # not given up nor let in after max_wait_s
                future.set_result(None)
                return
        self._inside -= 1

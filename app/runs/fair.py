"""Take turns at the executor fairly: one run in flight per learner, a rate per learner, and the
app's run slots shared round-robin among learners.

Every route that starts a run (Run it, a lesson example, a lab run) claims a `Turn` before it
answers, so a refusal is a plain 409 or 429 the page can show; the run then waits for its turn
and gives it back however it ends. Waiting turns are kept per learner and served round-robin:
a learner's next run never goes ahead of another learner's first. The embedded executor and
the job bus both sit behind this one gate, so neither sees more than `slots` runs of this
process at once, and a flood from one learner waits behind everyone else.

The state is this process's (as `memory://` rate counts are): with several app processes, each
has its own slots, and one learner may have a run in flight in each.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from enum import Enum

from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from app.errors import Conflict, TooManyRequests

IN_FLIGHT = "You already have a run going: wait for it to end (or stop it), then run again."
TOO_MANY = "That is a lot of runs in a minute: wait {wait} seconds, then run again."
WAITING = "Many runs at once: yours waits its turn…"


class _State(Enum):
    CLAIMED = "claimed"
    WAITING = "waiting"
    RUNNING = "running"
    RELEASED = "released"


class Turn:
    """One learner's claim on a run: `await turn.wait()` for a slot, `turn.release()` after
    (idempotent, from any thread)."""

    def __init__(self, gate: FairRuns, learner: str) -> None:
        self.gate = gate
        self.learner = learner
        self.state = _State.CLAIMED
        self.future: asyncio.Future[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def now(self) -> bool:
        """Take a free slot at once if nobody waits for one; else join the line (False)."""
        return self.gate._take_or_queue(self)

    async def wait(self) -> None:
        """Wait until this turn holds a slot (given back if cancelled meanwhile)."""
        if self.state is _State.CLAIMED and self.now():
            return
        if self.future is None:
            return  # released meanwhile: the caller's run is over before it began
        try:
            await self.future
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Give back the slot (or the place in line) and the learner's claim."""
        self.gate._release(self)


class FairRuns:
    """The gate: `claim(learner)` refuses a learner over their limits, else returns a Turn."""

    def __init__(
        self,
        slots: int,
        per_learner: int = 1,
        rate: str = "20/minute",
        storage: str = "memory://",
    ) -> None:
        self.slots = max(1, slots)
        self.per_learner = per_learner
        self._rate = parse(rate)
        self._limiter = MovingWindowRateLimiter(storage_from_string(storage))
        self._lock = threading.Lock()  # routes claim on worker threads, runs wait on the loop
        self._held: dict[str, int] = {}
        self._waiting: dict[str, deque[Turn]] = {}
        self._order: deque[str] = deque()  # learners with a waiting turn, next one first
        self.running = 0

    def claim(self, learner: str) -> Turn:
        """A turn for the learner; Conflict while they have `per_learner` runs in flight,
        TooManyRequests over their rate (a refused claim counts for neither)."""
        with self._lock:
            if self._held.get(learner, 0) >= self.per_learner:
                raise Conflict(IN_FLIGHT)
            if not self._limiter.hit(self._rate, "runs", learner):
                reset = self._limiter.get_window_stats(self._rate, "runs", learner).reset_time
                wait = max(1, math.ceil(reset - time.time()))
                raise TooManyRequests(TOO_MANY.format(wait=wait))
            self._held[learner] = self._held.get(learner, 0) + 1
        return Turn(self, learner)

    def waiting(self) -> int:
        """How many turns wait for a slot."""
        with self._lock:
            return sum(len(queue) for queue in self._waiting.values())

    def _take_or_queue(self, turn: Turn) -> bool:
        with self._lock:
            if turn.state is not _State.CLAIMED:
                return turn.state is _State.RUNNING
            if self.running < self.slots and not self._order:
                self.running += 1
                turn.state = _State.RUNNING
                return True
            turn.loop = asyncio.get_running_loop()
            turn.future = turn.loop.create_future()
            queue = self._waiting.setdefault(turn.learner, deque())
            if not queue:
                self._order.append(turn.learner)
            queue.append(turn)
            turn.state = _State.WAITING
            return False

    def _release(self, turn: Turn) -> None:
        with self._lock:
            was, turn.state = turn.state, _State.RELEASED
            if was is _State.RELEASED:
                return
            held = self._held.get(turn.learner, 1) - 1
            if held > 0:
                self._held[turn.learner] = held
            else:
                self._held.pop(turn.learner, None)
            if was is _State.WAITING:
                queue = self._waiting[turn.learner]
                queue.remove(turn)
                if not queue:
                    del self._waiting[turn.learner]
                    self._order.remove(turn.learner)
            elif was is _State.RUNNING:
                self.running -= 1
            woken = self._dispatch()
        for next_turn in woken:
            assert next_turn.loop is not None and next_turn.future is not None
            next_turn.loop.call_soon_threadsafe(_wake, next_turn.future)
        if was is _State.WAITING and turn.future is not None and turn.loop is not None:
            turn.loop.call_soon_threadsafe(turn.future.cancel)  # nobody waits on it any more

    def _dispatch(self) -> list[Turn]:
        """Hand free slots round-robin: the first waiting turn of the learner whose turn it is,
        who then goes to the back of the line if they have more waiting."""
        woken: list[Turn] = []
        while self.running < self.slots and self._order:
            learner = self._order.popleft()
            queue = self._waiting[learner]
            turn = queue.popleft()
            if queue:
                self._order.append(learner)
            else:
                del self._waiting[learner]
            turn.state = _State.RUNNING
            self.running += 1
            woken.append(turn)
        return woken


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

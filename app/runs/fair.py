"""Take turns at the executor fairly: one run in flight per learner, a rate per learner, and the
app's run slots shared among parties, then round-robin among a party's learners.

Every route that starts a run (Run it, a lesson example, a lab run) claims a `Turn` before it
answers, so a refusal is a plain 409, 429 or 503 the page can show; the run then waits for its
turn and gives it back however it ends. The embedded executor and the job bus both sit behind
this one gate, so neither sees more than `slots` runs of this process at once.

Turns are shared by *party*, not by learner: a guest costs one request, so an address that made
many guests would otherwise have had a turn for each (issue 36, H: six guests' hangs held a
seventh learner's run for 61 s). A signed-in learner is a party of one; the guests of one client
address (an IPv6 address's /64) are one party (`party_of`). A free slot goes to the waiting
party with the fewest runs going (the longest waiting of those first), and inside a party to its
learners round-robin: a party's next run never goes ahead of another party's first, and a
learner's next never ahead of a fellow party member's first. Waiting is bounded, per party and
in all; a claim past either bound is refused with Retry-After.

The state is this process's (as `memory://` rate counts are): with several app processes, each
has its own slots, and one learner may have a run in flight in each.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from app.accounts.throttle import address_key
from app.errors import Conflict, TooManyRequests, Unavailable

IN_FLIGHT = "You already have a run going: wait for it to end (or stop it), then run again."
TOO_MANY = "That is a lot of runs in a minute: wait {wait} seconds, then run again."
WAITING = "Many runs at once: yours waits its turn…"
PARTY_FULL = (
    "Many runs from your network are waiting already: wait {wait} seconds, then run again. "
    "Guests on one network share their turns; logged in, your runs take turns of their own."
)
ALL_FULL = "Many runs are waiting already: wait {wait} seconds, then run again."
# What a refusal for a full line says to wait: a slot frees within a run's time-out (8 to 20 s
# for the shipped items and labs), and a retry then finds the line shorter.
LINE_FULL_RETRY_S = 10


def party_of(learner: str, is_guest: bool, address: str) -> str:
    """The party a learner's runs take turns as: a signed-in learner alone, a guest with every
    guest of their client address, keyed as the address limits key it (IPv6: its /64, what one
    host or home network is given)."""
    if not is_guest:
        return f"learner:{learner}"
    return f"guests:{address_key(address)}"


class _State(Enum):
    CLAIMED = "claimed"
    WAITING = "waiting"
    RUNNING = "running"
    RELEASED = "released"


class Turn:
    """One learner's claim on a run: `await turn.wait()` for a slot, `turn.release()` after
    (idempotent, from any thread)."""

    def __init__(self, gate: FairRuns, learner: str, party: str) -> None:
        self.gate = gate
        self.learner = learner
        self.party = party
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


@dataclass
class _Party:
    """One party's runs: going, claimed and not yet going, and its learners' waiting turns."""

    running: int = 0
    pending: int = 0  # claimed, not yet holding a slot (waiting, or about to ask for one)
    order: deque[str] = field(default_factory=deque)  # its learners with a waiting turn
    waiting: dict[str, deque[Turn]] = field(default_factory=dict)

    def idle(self) -> bool:
        return self.running == 0 and self.pending == 0


class FairRuns:
    """The gate: `claim(learner, party)` refuses a learner over their limits, or a party (or
    everyone) with a full line, else returns a Turn."""

    def __init__(
        self,
        slots: int,
        per_learner: int = 1,
        rate: str = "20/minute",
        storage: str = "memory://",
        waiting_per_party: int = 40,
        waiting_in_all: int = 200,
    ) -> None:
        self.slots = max(1, slots)
        self.per_learner = per_learner
        self.waiting_per_party = max(1, waiting_per_party)
        self.waiting_in_all = max(1, waiting_in_all)
        self._rate = parse(rate)
        self._limiter = MovingWindowRateLimiter(storage_from_string(storage))
        self._lock = threading.Lock()  # routes claim on worker threads, runs wait on the loop
        self._held: dict[str, int] = {}
        self._parties: dict[str, _Party] = {}  # those with a run claimed or going
        self._order: deque[str] = deque()  # parties with a waiting turn, longest waiting first
        self._pending = 0
        self.running = 0

    def claim(self, learner: str, party: str | None = None) -> Turn:
        """A turn for the learner (their own party unless named); Conflict while they have
        `per_learner` runs in flight, TooManyRequests over their rate or with their party's
        line full, Unavailable with the whole line full (a refused claim counts for none)."""
        party = party or learner
        with self._lock:
            if self._held.get(learner, 0) >= self.per_learner:
                raise Conflict(IN_FLIGHT)
            self._refuse_a_full_line(party)
            if not self._limiter.hit(self._rate, "runs", learner):
                reset = self._limiter.get_window_stats(self._rate, "runs", learner).reset_time
                wait = max(1, math.ceil(reset - time.time()))
                raise TooManyRequests(TOO_MANY.format(wait=wait), retry_after=wait)
            self._held[learner] = self._held.get(learner, 0) + 1
            self._parties.setdefault(party, _Party()).pending += 1
            self._pending += 1
        return Turn(self, learner, party)

    def waiting(self) -> int:
        """How many turns wait for a slot."""
        with self._lock:
            return sum(
                len(queue) for one in self._parties.values() for queue in one.waiting.values()
            )

    def _refuse_a_full_line(self, party: str) -> None:
        """Refuse a claim that would wait (no slot free for it) where its party's line, or
        everyone's, is as long as it may be."""
        if self.running + self._pending < self.slots:
            return  # a slot is free for it
        wait = LINE_FULL_RETRY_S
        known = self._parties.get(party)
        if known is not None and known.pending >= self.waiting_per_party:
            raise TooManyRequests(PARTY_FULL.format(wait=wait), retry_after=wait)
        if self._pending >= self.waiting_in_all:
            raise Unavailable(ALL_FULL.format(wait=wait), retry_after=wait)

    def _take_or_queue(self, turn: Turn) -> bool:
        with self._lock:
            if turn.state is not _State.CLAIMED:
                return turn.state is _State.RUNNING
            party = self._parties[turn.party]
            if self.running < self.slots and not self._order:
                self._start(turn, party)
                return True
            turn.loop = asyncio.get_running_loop()
            turn.future = turn.loop.create_future()
            if not party.order:
                self._order.append(turn.party)  # the party's first waiting turn
            queue = party.waiting.setdefault(turn.learner, deque())
            if not queue:
                party.order.append(turn.learner)
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
            party = self._parties[turn.party]
            if was is _State.RUNNING:
                self.running -= 1
                party.running -= 1
            else:
                self._pending -= 1
                party.pending -= 1
            if was is _State.WAITING:
                queue = party.waiting[turn.learner]
                queue.remove(turn)
                if not queue:
                    del party.waiting[turn.learner]
                    party.order.remove(turn.learner)
                    if not party.order:
                        self._order.remove(turn.party)
            if party.idle():
                del self._parties[turn.party]
            woken = self._dispatch()
        for next_turn in woken:
            assert next_turn.loop is not None and next_turn.future is not None
            next_turn.loop.call_soon_threadsafe(_wake, next_turn.future)
        if was is _State.WAITING and turn.future is not None and turn.loop is not None:
            turn.loop.call_soon_threadsafe(turn.future.cancel)  # nobody waits on it any more

    def _start(self, turn: Turn, party: _Party) -> None:
        """The turn takes a slot."""
        turn.state = _State.RUNNING
        self.running += 1
        party.running += 1
        self._pending -= 1
        party.pending -= 1

    def _dispatch(self) -> list[Turn]:
        """Hand free slots out: each to the waiting party with the fewest runs going (of those,
        the one waiting longest), there to its learner whose turn it is; a party or learner
        with more waiting goes to the back of its line."""
        woken: list[Turn] = []
        while self.running < self.slots and self._order:
            name = min(self._order, key=lambda one: self._parties[one].running)
            self._order.remove(name)  # min keeps the first of equals: the longest waiting
            party = self._parties[name]
            learner = party.order.popleft()
            queue = party.waiting[learner]
            turn = queue.popleft()
            if queue:
                party.order.append(learner)
            else:
                del party.waiting[learner]
            if party.order:
                self._order.append(name)
            self._start(turn, party)
            woken.append(turn)
        return woken


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

"""The fair gate: one run in flight per learner, a rate, and slots shared round-robin."""

from __future__ import annotations

import asyncio

import pytest

from app.errors import Conflict, TooManyRequests
from app.runs.fair import FairRuns


def test_a_learner_with_a_run_in_flight_is_refused_another_until_it_ends() -> None:
    gate = FairRuns(slots=4)
    turn = gate.claim("a")
    with pytest.raises(Conflict, match="already have a run going"):
        gate.claim("a")
    gate.claim("b").release()  # someone else is not held up
    turn.release()
    turn.release()  # twice is harmless
    gate.claim("a").release()


def test_runs_beyond_a_learners_rate_are_refused_with_the_wait() -> None:
    gate = FairRuns(slots=4, rate="2/minute")
    gate.claim("a").release()
    gate.claim("a").release()
    with pytest.raises(TooManyRequests, match=r"wait \d+ seconds"):
        gate.claim("a")
    gate.claim("b").release()  # a rate per learner


def test_another_learners_first_run_goes_before_a_learners_fifth() -> None:
    async def main() -> list[str]:
        gate = FairRuns(slots=1, per_learner=5)
        started: list[str] = []
        held = gate.claim("a")
        assert held.now()  # a's first holds the only slot

        async def run(learner: str, name: str) -> None:
            turn = gate.claim(learner)
            await turn.wait()
            started.append(name)
            await asyncio.sleep(0)
            turn.release()

        tasks = [asyncio.create_task(run("a", f"a{n}")) for n in range(2, 6)]
        await asyncio.sleep(0)  # a's four wait in line first
        tasks.append(asyncio.create_task(run("b", "b1")))
        await asyncio.sleep(0)
        assert gate.waiting() == 5
        held.release()
        await asyncio.gather(*tasks)
        return started

    started = asyncio.run(main())
    assert started.index("b1") < started.index("a3")
    assert started == ["a2", "b1", "a3", "a4", "a5"]


def test_a_run_cancelled_while_waiting_gives_its_place_and_claim_back() -> None:
    async def main() -> None:
        gate = FairRuns(slots=1)
        held = gate.claim("a")
        assert held.now()
        waiting = asyncio.create_task(gate.claim("b").wait())
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert gate.waiting() == 0
        gate.claim("b").release()  # b is free to run again
        held.release()
        assert gate.running == 0

    asyncio.run(main())

"""The fair gate: one run in flight per learner, a rate, slots shared among parties (a signed-in
learner; the guests of one address) and round-robin inside one, and a bounded line."""

from __future__ import annotations

import asyncio

import pytest

from app.errors import Conflict, TooManyRequests, Unavailable
from app.runs.fair import FairRuns, Turn, party_of


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


def test_guests_of_one_address_are_one_party_and_a_signed_in_learner_a_party_of_one() -> None:
    assert party_of("1", True, "203.0.113.7") == party_of("2", True, "203.0.113.7")
    assert party_of("1", True, "203.0.113.7") != party_of("3", True, "203.0.113.8")
    assert party_of("4", False, "203.0.113.7") != party_of("5", False, "203.0.113.7")
    assert party_of("4", False, "203.0.113.7") != party_of("1", True, "203.0.113.7")


def test_guests_of_one_ipv6_64_are_one_party_and_a_mapped_ipv4_is_its_ipv4() -> None:
    assert party_of("1", True, "2001:db8:1:2::1") == party_of("2", True, "2001:db8:1:2:ffff::9")
    assert party_of("1", True, "2001:db8:1:2::1") != party_of("3", True, "2001:db8:1:3::1")
    assert party_of("1", True, "::ffff:203.0.113.7") == party_of("2", True, "203.0.113.7")


async def _started_in_order(gate: FairRuns, held: list[Turn], claims: list[tuple[str, str]]):
    """Queue the claims (learner, party) in this order, then free the held slots one by one:
    the learners in the order they got a slot."""
    started: list[str] = []

    async def run(learner: str, party: str) -> None:
        turn = gate.claim(learner, party)
        await turn.wait()
        started.append(learner)
        await asyncio.sleep(0)
        turn.release()

    tasks = []
    for learner, party in claims:
        tasks.append(asyncio.create_task(run(learner, party)))
        await asyncio.sleep(0)  # each joins the line in turn
    assert gate.waiting() == len(claims)
    for turn in held:
        turn.release()
    await asyncio.gather(*tasks)
    return started


def test_a_party_of_many_guests_takes_one_turn_among_the_others() -> None:
    async def main() -> list[str]:
        gate = FairRuns(slots=1)
        held = gate.claim("held", "elsewhere")
        assert held.now()
        guests = [(f"g{n}", "guests:203.0.113.7") for n in range(1, 5)]
        return await _started_in_order(gate, [held], [*guests, ("ada", "learner:ada")])

    # Ada came after four guests of one address: she goes after the first, not the fourth.
    assert asyncio.run(main()) == ["g1", "ada", "g2", "g3", "g4"]


def test_a_free_slot_goes_to_the_waiting_party_with_the_fewest_runs_going() -> None:
    async def main() -> list[str]:
        gate = FairRuns(slots=4)
        busy = [gate.claim(f"s{n}", "guests:sybil") for n in range(3)]
        other = gate.claim("o", "guests:other")
        assert all(turn.now() for turn in [*busy, other])
        started: list[str] = []

        async def run(learner: str, party: str) -> None:
            turn = gate.claim(learner, party)
            await turn.wait()
            started.append(learner)

        waiting = [
            asyncio.create_task(run("s9", "guests:sybil")),
            asyncio.create_task(run("o2", "guests:other")),
        ]
        await asyncio.sleep(0)
        busy[0].release()  # a sybil's slot frees; the other party, with one going to two, wins it
        for _ in range(3):  # o2 is woken, then runs
            await asyncio.sleep(0)
        assert started == ["o2"]
        other.release()
        await asyncio.gather(*waiting)
        return started

    assert asyncio.run(main()) == ["o2", "s9"]


def test_a_partys_line_is_bounded_and_a_refusal_says_when_to_try_again() -> None:
    gate = FairRuns(slots=1, rate="1/minute", waiting_per_party=2, waiting_in_all=10)
    assert gate.claim("g1", "guests:a").now()
    second = gate.claim("g2", "guests:a")
    gate.claim("g3", "guests:a")
    with pytest.raises(TooManyRequests, match="from your network") as refused:
        gate.claim("g4", "guests:a")
    assert refused.value.retry_after is not None and refused.value.retry_after >= 1
    gate.claim("b", "guests:b")  # another address waits as before
    second.release()  # g2 gives up their place: g4 may wait now
    gate.claim("g4", "guests:a")  # the refused claim did not use up g4's one run a minute


def test_the_whole_line_is_bounded() -> None:
    gate = FairRuns(slots=1, waiting_per_party=5, waiting_in_all=2)
    assert gate.claim("a", "a").now()
    gate.claim("b", "b")
    gate.claim("c", "c")
    with pytest.raises(Unavailable, match="Many runs are waiting") as refused:
        gate.claim("d", "d")
    assert refused.value.retry_after is not None and refused.value.retry_after >= 1
    with pytest.raises(Unavailable):
        gate.claim("d", "d")  # still full, and not in flight: refused for the line only

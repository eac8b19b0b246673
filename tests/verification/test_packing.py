"""Packing verify's work on the slots: costliest first, hangs on a spare lane, results in order."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path

import pytest

from app.challenges.loader import LoadReport, load_path
from app.verification import packing, pipeline
from tests.support.fake_executor import FakeExecutor

CHALLENGES = Path(__file__).resolve().parents[2] / "challenges"


@pytest.fixture(scope="module")
def course() -> LoadReport:
    return load_path(CHALLENGES)


def test_the_costliest_work_starts_first_and_results_come_back_in_order():
    started: list[str] = []
    lock = threading.Lock()

    def piece(name: str) -> str:
        with lock:
            started.append(name)
        return name

    costs = {"a": 1.0, "b": 2.0, "c": 9.0, "d": 0.5, "e": 5.0}
    work = [packing.Work(partial(piece, name), cost) for name, cost in costs.items()]
    # One job: one piece after another, in the order given, as before.
    assert list(packing.in_order(work, jobs=1)) == ["a", "b", "c", "d", "e"]
    assert started == ["a", "b", "c", "d", "e"]
    started.clear()
    done = list(packing.in_order(work, jobs=2))
    assert done == ["a", "b", "c", "d", "e"]
    assert set(started[:2]) == {"c", "e"}
    assert started[-1] == "d"


def test_work_that_waits_at_its_time_limit_runs_beside_the_busy_work():
    lane_started = threading.Event()

    def busy() -> bool:
        # Both busy workers hold their slot until the waiting piece has started: it can only
        # start on a lane of its own, not queued behind them.
        return lane_started.wait(timeout=30)

    def waits() -> bool:
        lane_started.set()
        return True

    work = [
        packing.Work(busy, 5.0),
        packing.Work(busy, 5.0),
        packing.Work(waits, 1.0, waits=True),
    ]
    assert list(packing.in_order(work, jobs=2)) == [True, True, True]


def test_the_shipped_hang_keys_are_known_to_wait_and_compile_items_to_cost_most(course):
    report = course
    deadlocks = next(s for s in report.sets if s.challenge_set.id == "collective-deadlocks")
    flagged = {
        item.id: pipeline._item_cost(deadlocks, item, pipeline.REPEATS)
        for item in deadlocks.challenge_set.items
    }
    waiting = {item_id for item_id, (hangs, _) in flagged.items() if hangs}
    assert "swapped-order" in waiting and "partial-barrier" in waiting
    assert len(waiting) < len(flagged)  # the items whose key says the run ends are busy work
    compile_set = next(s for s in report.sets if s.challenge_set.id == "compile-ddp-set")
    plain = next(s for s in report.sets if s.challenge_set.id == "collectives-mastery")
    cheapest_compile = min(
        pipeline._item_cost(compile_set, item, 3)[1]
        for item in compile_set.challenge_set.items
        if item.id in compile_set.code
    )
    dearest_plain = max(
        pipeline._item_cost(plain, item, 3)[1] for item in plain.challenge_set.items
    )
    assert cheapest_compile > dearest_plain


def test_a_snippet_that_sleeps_for_seconds_waits_on_the_lane_and_costs_its_sleep():
    sleeper = "import time\nif rank == 1:\n    time.sleep(8)  # away until rank 0 times out\n"
    assert packing.sleeps_s(sleeper) == 8.0
    assert packing.sleeps_s("import time\ntime.sleep(0.05)\nsleep(delay)\n") == 0.05
    assert packing.sleeps_s("def broken(:\n") == 0.0
    assert packing.mostly_waits(sleeper, hangs=False)
    assert not packing.mostly_waits("import time\ntime.sleep(0.05)\n", hangs=False)
    assert packing.run_cost(sleeper, 2) > 8.0


def test_the_shipped_timeout_items_whose_ranks_sleep_wait_beside_the_busy_work(course):
    deadlocks = next(s for s in course.sets if s.challenge_set.id == "collective-deadlocks")
    sleeping = [
        item
        for item in deadlocks.challenge_set.items
        if item.id.split("@")[0] in {"pg-timeout", "monitored-barrier"}
    ]
    assert len(sleeping) >= 2
    for item in sleeping:
        waits, cost = pipeline._item_cost(deadlocks, item, pipeline.REPEATS)
        # Their keys say the run ends (a timeout error), yet rank 1 sleeps through it.
        assert waits, item.id
        assert cost > pipeline.REPEATS * 6, item.id


def test_a_whole_selection_comes_back_in_the_order_names_gives_it_with_two_jobs(course):
    report = course
    sets = [
        s for s in report.sets if s.challenge_set.id in {"compile-ddp-set", "collective-deadlocks"}
    ]
    labs = report.labs[:1]
    topics = [t for t in report.topics if t.topic.id == "compile-ddp"]
    selection = pipeline.choose(sets, labs, topics, (), None, True, lambda: None, print)  # type: ignore[arg-type,return-value]
    outcomes = list(pipeline.run(FakeExecutor(), selection, repeats=1, jobs=2))
    assert [o.report.item_id for o in outcomes] == list(pipeline.names(selection))


def test_claims_about_the_same_request_share_its_runs_within_one_verify_only(course):
    # The compile-ddp topic's proofs run the set's snippets with the same launch: within one
    # verify each request is made once (run 0, then each perturbed order), and every claim is
    # still judged on all of its runs; a second verify observes afresh.
    sets = [s for s in course.sets if s.challenge_set.id == "compile-ddp-set"]
    topics = [t for t in course.topics if t.topic.id == "compile-ddp"]
    selection = pipeline.choose(sets, [], topics, (), None, True, lambda: None, print)  # type: ignore[arg-type,return-value]
    assert selection.proof_runs
    executor = FakeExecutor()
    outcomes = list(pipeline.run(executor, selection, repeats=3, jobs=2))
    assert sets[0].fixed_code  # a fix that is also a proof's snippet: shared too
    made = [request.model_dump_json() for request in executor.requests]
    assert len(made) == len(set(made))
    proofs = [o for o in outcomes if o.kind == pipeline.PROOF]
    assert proofs and all(o.runs == 3 for o in proofs)
    items = [o for o in outcomes if o.kind == pipeline.ITEM and o.runs]
    assert all(o.runs >= 3 for o in items)
    first = len(executor.requests)
    list(pipeline.run(executor, selection, repeats=3, jobs=2))
    assert len(executor.requests) == 2 * first

"""Verify perturbs scheduling: a claim that holds only by a lucky rank order fails."""

from __future__ import annotations

import pytest

from app.challenges.loader import load_path
from app.verification import batch
from app.verification import service as verification
from app.verification.rules import Verdict
from tests.conftest import FIXTURES
from tests.support.fake_executor import FakeExecutor


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_over_its_runs_every_rank_goes_first(nproc):
    firsts = set()
    for run in range(nproc):
        delays = verification.schedule(run, nproc)
        assert delays == [] if run == 0 else len(delays) == nproc
        if delays:
            firsts.add(delays.index(0.0))
            assert sorted(delays) == [k * verification.PERTURB_STEP_S for k in range(nproc)]
    assert firsts | {0} == set(range(nproc))  # run 0 is as it comes: rank 0, usually


def test_verify_asks_the_executor_for_a_perturbed_schedule():
    loaded = load_path(FIXTURES / "perturb").sets[0]
    executor = FakeExecutor()
    batch.verify_timed(executor, loaded, loaded.challenge_set.items[1], 3, batch.ExecutorFacts())
    assert [r.rank_delays_s for r in executor.requests] == [
        [],
        verification.schedule(1, 2),
        verification.schedule(2, 2),
    ]
    assert verification.schedule(1, 2) != verification.schedule(2, 2)


@pytest.mark.executor
def test_a_key_true_only_by_a_lucky_order_fails_and_a_true_one_passes(executor_url):
    from app.config import Settings
    from app.executor_client import HttpExecutorClient

    loaded = load_path(FIXTURES / "perturb").sets[0]
    lucky, true = loaded.challenge_set.items
    client = HttpExecutorClient(executor_url, token=Settings().executor_token)
    facts = batch.executor_facts(client)
    for _ in range(2):
        failed = batch.verify_timed(client, loaded, lucky, 3, facts).report
        assert failed.verdict is Verdict.FAIL
        assert any("order" in problem for problem in failed.problems), failed.problems
        passed = batch.verify_timed(client, loaded, true, 3, facts).report
        assert passed.verdict is Verdict.PASS, passed.problems


RAISE_AT_ONCE = """
import os
raise RuntimeError(f"rank {os.environ['RANK']} gives up")
"""


@pytest.mark.executor
def test_a_delayed_rank_still_reaches_its_own_failure_before_the_stop(executor_url):
    """A perturbed rank starts late by design: a peer's failure must not stop it before it got
    as far as it would have had they started together (torchrun stops peers 0.1 s after)."""
    from app.config import Settings
    from app.executor_client import HttpExecutorClient
    from executor.contract import RunRequest

    client = HttpExecutorClient(executor_url, token=Settings().executor_token)
    delays = [0.0, 4 * verification.PERTURB_STEP_S]  # rank 1 starts well after rank 0 fails
    request = RunRequest(
        code=RAISE_AT_ONCE, nproc=2, timeout_s=30, use_cache=False, rank_delays_s=delays
    )
    result = client.run(request)
    assert [
        rank.exception.type if rank.exception else rank.status.value for rank in result.ranks
    ] == [
        "RuntimeError",
        "RuntimeError",
    ]


# Each rank works a while, prints, then raises: the delayed rank's first print (its second
# delay) comes long after the run started, when its peer has already failed.
PRINT_THEN_RAISE = """
import os, time
time.sleep(1.0)  # the work before the first print (training steps, say)
print(f"rank {os.environ['RANK']} worked", flush=True)
raise RuntimeError(f"rank {os.environ['RANK']} gives up")
"""


@pytest.mark.executor
def test_a_rank_delayed_at_a_late_first_print_still_reaches_its_own_failure(executor_url):
    """The perturbation's delay before a rank's first write can come long after the start: the
    stop after a peer's failure still gives the delayed rank its delays back."""
    from app.config import Settings
    from app.executor_client import HttpExecutorClient
    from executor.contract import RunRequest

    client = HttpExecutorClient(executor_url, token=Settings().executor_token)
    delays = [0.0, 4 * verification.PERTURB_STEP_S]
    request = RunRequest(
        code=PRINT_THEN_RAISE, nproc=2, timeout_s=30, use_cache=False, rank_delays_s=delays
    )
    result = client.run(request)
    assert [
        (rank.stdout, rank.exception.type if rank.exception else rank.status.value)
        for rank in result.ranks
    ] == [("rank 0 worked\n", "RuntimeError"), ("rank 1 worked\n", "RuntimeError")]

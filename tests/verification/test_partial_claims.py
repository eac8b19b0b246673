"""One-rank claims over real gloo ranks: a one-rank key is proven, a true distractor fails.

tests/fixtures/claims holds two items on one snippet (each rank adds rank + 1 with all_reduce,
so every rank prints `sum 3.0`): a multi-select key made of one-rank statements, and a
distractor that states only that rank 0 finishes, which is true.
"""

from __future__ import annotations

import pytest

from app.challenges import loader
from app.config import ROOT
from app.executor_client import HttpExecutorClient
from app.verification import service
from app.verification.rules import Verdict, judge

pytestmark = pytest.mark.executor
REPEATS = 3


def test_a_one_rank_key_passes_and_a_true_one_rank_distractor_fails(executor_url: str) -> None:
    report = loader.load_path(ROOT / "tests" / "fixtures" / "claims")
    assert report.ok, report.errors
    (loaded,) = report.sets
    keys = loaded.challenge_set.item("one-rank-keys")
    assert keys is not None
    proven = service.verify_item(
        HttpExecutorClient(executor_url), loaded, keys, REPEATS, cuda_devices=0
    )
    assert proven.verdict is Verdict.PASS, proven.problems
    runs = [o for o in proven.observations if not o.long_limit and not o.fixed]
    assert len(runs) == REPEATS
    assert {rank.stdout for o in runs for rank in o.result.ranks} == {"sum 3.0\n"}

    weak = loaded.challenge_set.item("weak-distractor")
    assert weak is not None and loaded.code[weak.id] == loaded.code[keys.id]
    refuted = judge(weak, proven.observations)  # the same snippet: the same evidence
    assert refuted.verdict is Verdict.FAIL
    assert refuted.problems == [
        "distractor B also matches what was observed: all it states (rank 0: status "
        "'returns') held in every one of 3 run(s); a distractor must be shown false"
    ]

"""Sets written to catch a verifier out: true keys pass and wrong keys fail, over 3 real repeats.

tests/fixtures/gaps/true holds one item per gap with a true key; tests/fixtures/gaps/wrong holds
the same snippets with wrong keys. The wrong set is judged on the true set's observations where
the code is the same (the same evidence, a different claim), and run for real otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.challenges import loader
from app.challenges.loader import LoadedSet
from app.config import ROOT
from app.executor_client import HttpExecutorClient
from app.verification import service
from app.verification.rules import Verdict, judge
from executor.contract import Environment, OutputEvent, RankResult, RunRequest, RunResult
from tests.support.items import predict_item

GAPS = ROOT / "tests" / "fixtures" / "gaps"
REPEATS = 3

# For each wrong key: what the reason must say (it names the rank and the claim).
WRONG_REASONS = {
    "crashed-rank": ["rank 1 is killed (exit -9), but the claim is that it returns"],
    "one-rank-hangs": ["rank 0 returns, but the claim is that it hangs"],
    "slow-rank": ["expected a hang, but the run ended with status ok"],
    "unseeded-values": ["printed something else than rank(s)", "not the same"],
    "warning-and-subclass": [
        "rank 1 raised DistBackendError, expected ValueError",
        "fixed code, run 1: ended error (rank 1 raises DistBackendError)",
        "fixed code, run 1: still shows the failure",
    ],
    "slow-rank-short-limit": ["a slow rank, not a hang"],
}


def load(name: str) -> LoadedSet:
    report = loader.load_path(GAPS / name)
    assert report.ok, report.errors
    (loaded,) = report.sets
    return loaded


@pytest.fixture(scope="module")
def true_reports(executor_url: str) -> dict[str, object]:
    client = HttpExecutorClient(executor_url)
    loaded = load("true")
    return {
        item.id: service.verify_item(client, loaded, item, REPEATS, cuda_devices=0)
        for item in loaded.challenge_set.items
    }


@pytest.mark.executor
def test_every_true_key_passes_over_three_repeats(true_reports) -> None:
    for item_id, report in true_reports.items():
        assert report.verdict is Verdict.PASS, (item_id, report.problems)
        runs = [o for o in report.observations if not o.long_limit and not o.fixed]
        assert len(runs) >= (1 if item_id == "one-rank-hangs" else REPEATS)
    hang = true_reports["one-rank-hangs"]
    assert any("blocked rank(s) [1]" in note for note in hang.notes), hang.notes
    assert [o.long_limit for o in hang.observations] == [False, True]
    assert hang.observations[1].result.duration_ms >= 29_000  # re-run with >= 30 s
    fixed = [o for o in true_reports["warning-and-subclass"].observations if o.fixed]
    assert len(fixed) == REPEATS


@pytest.mark.executor
def test_every_wrong_key_fails_naming_the_rank_and_the_claim(
    true_reports, executor_url: str
) -> None:
    true_set, wrong_set = load("true"), load("wrong")
    client = HttpExecutorClient(executor_url)
    assert {item.id for item in wrong_set.challenge_set.items} == set(WRONG_REASONS)
    for item in wrong_set.challenge_set.items:
        same_code = true_set.code.get(item.id) == wrong_set.code[item.id]
        same_fix = true_set.fixed_code.get(item.id) == wrong_set.fixed_code.get(item.id)
        if item.id in true_reports and same_code and same_fix:
            report = judge(item, true_reports[item.id].observations)
        else:
            report = service.verify_item(client, wrong_set, item, REPEATS, cuda_devices=0)
        assert report.verdict is Verdict.FAIL, item.id
        text = "\n".join(report.problems)
        for reason in WRONG_REASONS[item.id]:
            assert reason in text, (item.id, report.problems)


ENV = Environment(torch="2.13.0+cpu", backend="gloo", device="cpu", nproc=1, python="3.11.7")


class ScriptedClient:
    """Answers each run with the next scripted stdout, as a rank that drew unseeded numbers."""

    def __init__(self, outputs: list[str], unseeded: bool) -> None:
        self.outputs, self.unseeded, self.requests = list(outputs), unseeded, 0

    def health(self) -> dict[str, object]:
        return {"cuda_devices": 0}

    def stream(self, request: RunRequest) -> Iterator[OutputEvent | RunResult]:
        text = self.outputs[min(self.requests, len(self.outputs) - 1)]
        self.requests += 1
        rank = RankResult(
            rank=0, status="ok", exit_code=0, stdout=text, unseeded_random=self.unseeded
        )
        yield OutputEvent(rank=0, stream="stdout", text=text)
        yield RunResult(status="ok", duration_ms=5, ranks=[rank], environment=ENV)


def test_fixed_text_over_unseeded_output_fails_even_when_three_runs_agreed() -> None:
    loaded = load("true")
    item = predict_item(
        id="unseeded-values",  # the loaded set holds its code
        options=[
            {"id": "A", "text": "1", "outcome": {"ranks": {"0": {"stdout": "1\n"}}}},
            {"id": "B", "text": "3", "outcome": {"ranks": {"0": {"stdout": "3\n"}}}},
        ],
    )
    lucky = ScriptedClient(["1\n", "1\n", "1\n", "1\n", "3\n"], unseeded=True)
    report = service.verify_item(lucky, loaded, item, REPEATS, cuda_devices=0)
    assert report.verdict is Verdict.FAIL
    assert any("rank 0's output varies between runs" in p for p in report.problems)
    assert lucky.requests == 5  # three runs agreed; more runs were made until it varied
    seeded = ScriptedClient(["1\n"], unseeded=False)
    assert service.verify_item(seeded, loaded, item, REPEATS, 0).verdict is Verdict.PASS
    assert seeded.requests == REPEATS  # nothing drew unseeded numbers: three runs suffice

"""Run it on a proven hang: the outcome verify recorded is served at once, not re-run to its
time-out; an edited snippet (another content hash) runs for real."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.challenges import loader
from app.challenges.schema import proven_by_run
from app.verification import evidence, hangs, proofs, variant_sets
from app.verification.rules import claims_hang
from executor.contract import Environment, RankResult, RunResult, StuckAt
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.runs.test_run_it import events
from tests.support.fake_executor import GatedExecutor
from tests.support.learner import Learner
from tests.support.options import shown_options

KEY = proofs.item_key("test-runs", "all-reduce")
ROOT = Path(__file__).resolve().parents[2]


def hang_observed() -> RunResult:
    """A time-out as verify observes a hang: both ranks stuck in a collective, idle."""
    stuck = StuckAt(line=3, call="dist.all_reduce", distributed=True, cpu_ms=0, sample_ms=100)
    return RunResult(
        status="timeout",
        duration_ms=3100,
        ranks=[
            RankResult(rank=rank, status="timeout", exit_code=None, stdout="", stuck=stuck)
            for rank in (0, 1)
        ],
        environment=Environment(
            torch="2.13.0+cpu", backend="gloo", device="cpu", nproc=2, python="3.11.7"
        ),
        observed_at="2026-11-20T08:00:00Z",
        stopped_when_stuck=True,
    )


@pytest.fixture
def challenges(tmp_path):
    """The test content, with a proofs file that records the item as a proven hang."""
    folder = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, folder)
    loaded = next(
        found for found in loader.load_path(folder).sets if found.challenge_set.id == "test-runs"
    )
    item = loaded.challenge_set.items[0]
    observed = hangs.to_record("pass", [hang_observed()])
    proof = proofs.Proof("pass", evidence.item_hash(loaded, item), observed)
    proofs.save(folder / proofs.FILE_NAME, {KEY: proof}, "2.13.0+cpu", "gloo")
    return folder


def run_it(app) -> list[tuple[str, dict]]:
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        response = learner.get(f"{attempt}/q/1/run")
        assert response.status_code == 200
        return events(response.text)


def test_a_proven_hangs_run_it_serves_the_recorded_time_out_without_running_it(
    app_factory, sqlite_url, challenges
):
    executor = GatedExecutor(wait_s=5.0)  # would block: it must not be called
    streamed = run_it(app_factory(sqlite_url, executor=executor, challenges_dir=challenges))
    assert not executor.entered.is_set() and executor.requests == []
    [(name, result)] = streamed
    assert name == "result" and result["recorded"] is True
    assert result["status"] == "timeout" and result["observed_at"] == "2026-11-20T08:00:00Z"
    assert [rank["stuck"]["call"] for rank in result["ranks"]] == ["dist.all_reduce"] * 2


def test_an_edited_snippet_is_run_for_real(app_factory, sqlite_url, challenges):
    snippet = challenges / "runs" / "all_reduce.py"
    snippet.write_text(snippet.read_text() + "# edited\n")
    executor = GatedExecutor()
    executor.gate.set()
    streamed = run_it(app_factory(sqlite_url, executor=executor, challenges_dir=challenges))
    assert [request.code for request in executor.requests] == [snippet.read_text()]
    name, result = streamed[-1]
    assert name == "result" and result["status"] == "ok" and "recorded" not in result


def test_verify_keeps_a_passing_time_out_beside_its_proof_and_reads_it_back(tmp_path):
    path = tmp_path / proofs.FILE_NAME
    kept = proofs.Proof("pass", "abc", hangs.to_record("pass", [hang_observed()]))
    plain = proofs.Proof("pass", "def", hangs.to_record("pass", []))
    failed = proofs.Proof("fail", "ghi", hangs.to_record("fail", [hang_observed()]))
    proofs.save(path, {"s/hang": kept, "s/plain": plain, "s/failed": failed}, "2.13.0+cpu")
    read = proofs.load(path)
    assert read["s/hang"].observed == kept.observed and kept.observed is not None
    assert RunResult.model_validate(kept.observed) == hang_observed()
    assert read["s/plain"].observed is None and read["s/failed"].observed is None
    assert "observed" not in json.loads(path.read_text())["proofs"]["s/plain"]


def test_every_shipped_hang_has_its_observed_time_out_for_its_content_as_it_is():
    """`make proofs` keeps them: else Run it on a shipped hang holds a slot for its time-out."""
    shipped = loader.load_path(ROOT / "challenges")
    recorded = proofs.load(ROOT / "challenges" / proofs.FILE_NAME)
    # A parameterised item is proven variant by variant (`<item>@<variant>`): each has its own.
    hanging = [
        (proven_as, item)
        for loaded in shipped.sets
        for proven_as in [variant_sets.expanded(loaded)]
        for item in proven_as.challenge_set.items
        if proven_by_run(item) and claims_hang(item)
    ]
    assert len(hanging) >= 5
    assert any(variant_sets.SEPARATOR in item.id for _, item in hanging)  # variants are kept too
    for loaded, item in hanging:
        proof = recorded[proofs.item_key(loaded.challenge_set.id, item.id)]
        assert proof.hash == evidence.item_hash(loaded, item), item.id
        assert proof.observed is not None and proof.observed["status"] == "timeout", item.id


def test_a_variants_run_it_serves_the_outcome_recorded_for_that_variant(
    app_factory, sqlite_url, tmp_path
):
    """A pinned variant was proven as `<item>@<variant>`: its recorded outcome is found there
    (before, a variant always ran again, holding a slot for a hang's whole time-out)."""
    folder = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "variants", folder)
    loaded = next(
        s for s in loader.load_path(folder).sets if s.challenge_set.id == "variant-basics"
    )
    proven_as = variant_sets.expanded(loaded)
    first = loaded.challenge_set.items[0].id
    recorded = {
        proofs.item_key("variant-basics", item.id): proofs.Proof(
            "pass",
            evidence.item_hash(proven_as, item),
            hangs.to_record("pass", [hang_observed()]),
        )
        for item in proven_as.challenge_set.items
        if variant_sets.base_id(item.id) == first
    }
    assert len(recorded) >= 4 and all(variant_sets.SEPARATOR in key for key in recorded)
    proofs.save(folder / proofs.FILE_NAME, recorded, "2.13.0+cpu", "gloo")
    executor = GatedExecutor(wait_s=5.0)  # would block: it must not be called
    with TestClient(app_factory(sqlite_url, executor=executor, challenges_dir=folder)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("variant-basics")
        page = learner.get(f"{attempt}/q/1").text
        for option in shown_options(page):  # until right or out of tries: the question closes
            learner.answer(attempt, 1, option.value)
        response = learner.get(f"{attempt}/q/1/run")
    assert response.status_code == 200
    assert not executor.entered.is_set() and executor.requests == []
    [(name, result)] = events(response.text)
    assert name == "result" and result["recorded"] is True and result["status"] == "timeout"

"""What verify runs: the items asked for, less those proven for their content on this executor."""

from __future__ import annotations

from app.challenges.loader import load_path
from app.verification import incremental, proofs
from tests.conftest import TEST_CHALLENGES

NOW = incremental.Stamp("2.13.0+cpu", "gloo")


def _course():
    report = load_path(TEST_CHALLENGES)
    return report.sets, report.labs


def _item_ids(selection: incremental.Selection) -> list[str]:
    return [item.id for loaded in selection.sets for item in loaded.challenge_set.items]


def _all_proven() -> dict[str, proofs.Proof]:
    sets, labs = _course()
    return {key: proofs.Proof("pass", h) for key, h in proofs.current_hashes(sets, labs).items()}


def test_with_no_proofs_everything_runs():
    sets, labs = _course()
    selection = incremental.select(sets, labs, [], {}, None, NOW, force=False)
    assert selection.skipped == 0
    runnable = [i.id for s in sets for i in s.challenge_set.items if i.kind == "predict_output"]
    assert _item_ids(selection) == runnable and runnable


def test_items_proven_for_their_content_on_the_same_stamp_are_skipped():
    sets, labs = _course()
    selection = incremental.select(sets, labs, [], _all_proven(), NOW, NOW, force=False)
    executable = len(proofs.current_hashes(sets, labs))
    assert selection.skipped == executable > 0
    # Items with nothing to run are not selected either: nothing is left, no executor starts.
    assert selection.sets == [] and selection.labs == []


def test_an_edit_a_failed_proof_another_torch_or_all_runs_the_item_again():
    sets, labs = _course()
    proven = _all_proven()
    key = "test-runs/all-reduce"
    edited = {**proven, key: proofs.Proof("pass", "0" * 64)}
    assert "all-reduce" in _item_ids(incremental.select(sets, labs, [], edited, NOW, NOW, False))
    failed = {**proven, key: proofs.Proof("fail", proven[key].hash)}
    assert "all-reduce" in _item_ids(incremental.select(sets, labs, [], failed, NOW, NOW, False))
    older = incremental.Stamp("2.12.0+cpu", "gloo")
    assert incremental.select(sets, labs, [], proven, older, NOW, False).skipped == 0
    nccl = incremental.Stamp("2.13.0+cpu", "nccl")
    assert incremental.select(sets, labs, [], proven, nccl, NOW, False).skipped == 0
    assert incremental.select(sets, labs, [], proven, NOW, NOW, force=True).skipped == 0


def test_item_picks_items_by_id_or_key_and_names_what_it_cannot_find():
    sets, labs = _course()
    picked = incremental.select(sets, labs, ["all-reduce"], {}, None, NOW, False)
    assert _item_ids(picked) == ["all-reduce"] and picked.labs == []
    by_key = incremental.select(sets, labs, ["test-runs/all-reduce"], {}, None, NOW, False)
    assert _item_ids(by_key) == ["all-reduce"]
    missing = incremental.select(sets, labs, ["all-reduse"], {}, None, NOW, False)
    assert missing.unknown == ["all-reduse"]
    assert missing.suggestions == {"all-reduse": "all-reduce"}


def test_proofs_of_topics_are_skipped_when_proven_and_picked_by_topic_id():
    from app.config import ROOT

    report = load_path(ROOT / "challenges")
    runs = proofs.proof_runs(report.topics, report.sets)
    assert runs
    proven = {run.key: proofs.Proof("pass", run.hash) for run in runs}
    everything = incremental.select([], [], [], proven, NOW, NOW, False, runs)
    assert everything.proof_runs == [] and everything.skipped == len(runs)
    topic = report.topics[0].topic.id
    picked = incremental.select([], [], [topic], {}, None, NOW, False, runs)
    assert picked.proof_runs and not picked.unknown
    assert all(run.key.startswith(f"topic:{topic}:") for run in picked.proof_runs)
    assert len(picked.proof_runs) == sum(run.key.startswith(f"topic:{topic}:") for run in runs)


def test_a_set_id_picks_its_items_inline_proofs_as_it_picks_its_keys():
    from app.challenges.schema import InlineProof

    sets = load_path(TEST_CHALLENGES).sets
    proof = InlineProof.model_validate(
        {"code": "print(1)", "outcome": {"ranks": {"0": {"stdout": "1"}}}}
    )
    run = proofs.ProofRun(
        proofs.proof_key("set:test-runs", "item:all-reduce"), "runs/set.yaml", "all-reduce proof",
        proof, "print(1)",
    )  # fmt: skip
    by_set = incremental.select(sets, [], ["test-runs"], {}, None, NOW, False, [run])
    assert by_set.proof_runs == [run] and not by_set.unknown
    by_item = incremental.select(sets, [], ["test-runs/all-reduce"], {}, None, NOW, False, [run])
    assert by_item.proof_runs == [run] and _item_ids(by_item) == ["all-reduce"]
    other = incremental.select(sets, [], ["test-basics"], {}, None, NOW, False, [run])
    assert other.proof_runs == []

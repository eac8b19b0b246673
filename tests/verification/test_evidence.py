"""What a verification leaves behind, with no executor or database: hashes, records, lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from app.challenges.loader import LoadedSet
from app.challenges.schema import ChallengeSet, PredictOutputItem
from app.verification import evidence
from app.verification.rules import ItemReport, Observation, Verdict
from tests.support.fake_executor import canned_result
from tests.support.items import predict_item


def item(**changes: object) -> PredictOutputItem:
    return predict_item(code=None, code_file="p.py", **changes)


def test_the_content_hash_is_stable_for_the_same_item_and_code():
    assert evidence.content_hash(item(), "print(1)") == evidence.content_hash(item(), "print(1)")


def test_any_edit_to_the_item_or_its_code_changes_the_content_hash():
    original = evidence.content_hash(item(), "print(1)")
    edits = [
        evidence.content_hash(item(), "print(2)"),
        evidence.content_hash(item(explanation="E."), "print(1)"),
        evidence.content_hash(item(answer="B"), "print(1)"),
        evidence.content_hash(item(launch={"nproc": 3}), "print(1)"),
        evidence.content_hash(item(), "print(1)", "print(1)  # the fix"),
    ]
    assert original not in edits and len(set(edits)) == len(edits)


def test_an_item_record_carries_the_verdict_reasons_and_environment():
    report = ItemReport(
        "p",
        Verdict.FAIL,
        problems=["run 1: key A: rank 0 printed '2\\n'"],
        notes=["a note"],
        observations=[Observation(canned_result("2\n", "2\n"))],
    )
    record = evidence.item_record("set-a", "challenges/a/set.yaml", report, 812, "abc")
    assert json.loads(json.dumps(record)) == {
        "type": "item",
        "set_id": "set-a",
        "set_file": "challenges/a/set.yaml",
        "item_id": "p",
        "verdict": "fail",
        "reasons": ["run 1: key A: rank 0 printed '2\\n'"],
        "notes": ["a note"],
        "environment": {
            "torch": "2.13.0+cpu",
            "backend": "gloo",
            "device": "cpu",
            "nproc": 2,
            "python": "3.11.7",
        },
        "duration_ms": 812,
        "content_hash": "abc",
    }


def test_an_item_that_did_not_run_has_no_environment():
    report = ItemReport("g", Verdict.NEEDS_GPUS, notes=["needs 2 GPU(s)"])
    assert evidence.item_record("s", "f", report, 0, "h")["environment"] is None


def test_the_summary_fails_on_any_failed_key_or_broken_file():
    passing = evidence.summary_record({"pass": 2, "not_executable": 3}, [], 900, True)
    assert passing == {
        "type": "summary",
        "ok": True,
        "items": 5,
        "counts": {"not_executable": 3, "pass": 2},
        "file_errors": [],
        "duration_ms": 900,
        "recorded": True,
    }
    assert not evidence.summary_record({"pass": 1, "fail": 1}, [], 1, False)["ok"]
    assert not evidence.summary_record({"pass": 1}, ["a.yaml:1:1: bad"], 1, False)["ok"]


def test_the_proof_line_names_torch_backend_ranks_and_the_day():
    when = datetime(2026, 11, 23, 22, 30, tzinfo=UTC)
    assert (
        evidence.proof_line("2.13.0+cpu", "gloo", 2, when)
        == "Verified on torch 2.13.0+cpu, gloo, 2 ranks, 2026-11-23"
    )
    assert evidence.proof_line("2.13.0", "nccl", 1, when).endswith("nccl, 1 rank, 2026-11-23")


def test_a_loaded_items_hash_is_made_once_and_anew_for_an_edited_item_or_snippet(monkeypatch):
    """A closed question's page looks its proof up by the item's hash: made once per loaded
    set, not at every page, and never reused for content that is not the same objects."""
    made: list[str | None] = []
    real = evidence.content_hash

    def counted(item: object, code: str | None, fixed_code: str | None = None) -> str:
        made.append(code)
        return real(item, code, fixed_code)  # type: ignore[arg-type]

    monkeypatch.setattr(evidence, "content_hash", counted)
    original = item()
    loaded = LoadedSet(ChallengeSet.model_construct(), "set.yaml", code={original.id: "print(1)"})
    first = evidence.item_hash(loaded, original)
    assert [evidence.item_hash(loaded, original) for _ in range(3)] == [first] * 3
    assert made == ["print(1)"]
    edited = item(explanation="E.")
    assert evidence.item_hash(loaded, edited) != first
    loaded.code[original.id] = "print(2)"
    assert evidence.item_hash(loaded, edited) not in {first, real(edited, "print(1)")}
    assert made == ["print(1)", "print(1)", "print(2)"]

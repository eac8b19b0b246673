"""Whether a version's executable content is proven for exactly that content, and if not, why.

A set's keys are proven by a pass the database records for an item's content hash (the web
Verify, `ranklab verify` with a database) or by `challenges/proofs.json` (a pass, or "needs
GPUs" from a GPU host) for the same hash. A lab's steps and a topic's proofs are proven by
proofs.json (`ranklab verify --proofs`). A unit with nothing to run is proven by validating.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic
from app.challenges.schema import EXECUTABLE_KINDS
from app.verification import proofs
from app.verification.evidence import item_hash
from app.verification.models import VerificationRecord
from app.verification.records import JUDGED
from app.verification.rules import Verdict


@dataclass(frozen=True)
class Judgement:
    """A version's standing: proven (with the latest proof's date, if the database has one),
    or why not."""

    proven: bool
    reason: str | None = None
    verified_at: datetime | None = None
    failed: bool = False  # a Verify of this content failed (not merely unverified)


def _latest_judged(
    session: Session, set_id: str, hashes: Mapping[str, str]
) -> dict[str, VerificationRecord]:
    """The latest pass-or-fail record of each item for its content hash as given."""
    if not hashes:
        return {}
    rows = session.exec(
        select(VerificationRecord).where(
            VerificationRecord.set_id == set_id,
            col(VerificationRecord.verdict).in_(JUDGED),
            col(VerificationRecord.content_hash).in_(set(hashes.values())),
        )
    ).all()
    latest: dict[str, VerificationRecord] = {}
    for row in rows:
        if hashes.get(row.item_id) != row.content_hash:
            continue
        best = latest.get(row.item_id)
        if best is None or (row.verified_at, row.id or 0) > (best.verified_at, best.id or 0):
            latest[row.item_id] = row
    return latest


def _names(ids: list[str]) -> str:
    return ", ".join(f"`{one}`" for one in ids)


def judge(
    session: Session,
    loaded: LoadedSet | LoadedTopic | LoadedLab,
    file_proofs: Mapping[str, proofs.Proof],
) -> Judgement:
    """Judge one loaded unit: is everything it runs proven for this exact content?"""
    if isinstance(loaded, LoadedSet):
        return _judge_set(session, loaded, file_proofs)
    if isinstance(loaded, LoadedLab):
        keys = {
            step.id: (proofs.step_key(loaded.lab.id, step.id), proofs.step_hash(loaded, step.id))
            for step in loaded.lab.steps
        }
        return _by_file(keys, file_proofs, "step")
    keys = {run.label: (run.key, run.hash) for run in proofs.proof_runs([loaded], [])}
    return _by_file(keys, file_proofs, "proof")


def _by_file(
    keys: Mapping[str, tuple[str, str]], file_proofs: Mapping[str, proofs.Proof], what: str
) -> Judgement:
    statuses = {
        name: proofs.status(file_proofs, key, digest) for name, (key, digest) in keys.items()
    }
    failed = [name for name, verdict in statuses.items() if verdict == "fail"]
    unproven = [name for name, verdict in statuses.items() if verdict == "unproven"]
    if failed:
        return Judgement(False, f"{what} {_names(failed)} fails in proofs.json", failed=True)
    if unproven:
        return Judgement(
            False, f"not yet verified: {what} {_names(unproven)} (run `ranklab verify --proofs`)"
        )
    return Judgement(True)


def _judge_set(
    session: Session, loaded: LoadedSet, file_proofs: Mapping[str, proofs.Proof]
) -> Judgement:
    set_id = loaded.challenge_set.id
    hashes = {
        item.id: item_hash(loaded, item)
        for item in loaded.challenge_set.items
        if isinstance(item, EXECUTABLE_KINDS)
    }
    records = _latest_judged(session, set_id, hashes)
    failed: list[str] = []
    unproven: list[str] = []
    when: list[datetime] = []
    for item_id, digest in hashes.items():
        record = records.get(item_id)
        in_file = proofs.status(file_proofs, proofs.item_key(set_id, item_id), digest)
        if record is not None and record.verdict is Verdict.FAIL:
            failed.append(item_id)  # the latest Verify of this very content failed
        elif record is not None:
            when.append(record.verified_at)
        elif in_file == "fail":
            failed.append(item_id)
        elif in_file not in proofs.PROVEN:
            unproven.append(item_id)
    if failed:
        return Judgement(False, f"key of {_names(failed)} fails its Verify", failed=True)
    if unproven:
        return Judgement(False, f"not yet verified: {_names(unproven)}")
    return Judgement(True, verified_at=max(when) if when else None)

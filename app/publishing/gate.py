"""Whether a version's executable content is proven for exactly that content, and if not, why.

One rule for every unit: each thing it runs (a set's items proven by a run, numeric ones read
from what a snippet prints included, and its items' inline proofs; a topic's named proofs, its
cards' and items' inline proofs and its lesson's examples; a lab's steps) is a part with a proofs
key and a content hash. A part is proven when its latest judged record in the database for that
hash passed (the browser's Verify, `ranklab verify` with a database), or, with no such record,
when `challenges/proofs.json` holds a pass, or "needs GPUs", for that hash (`ranklab verify
--proofs`). A unit is proven when all its parts are; a unit with nothing to run is proven by
validating.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic
from app.challenges.schema import proven_by_run
from app.verification import proofs, variant_sets
from app.verification.evidence import item_hash
from app.verification.models import VerificationRecord
from app.verification.records import JUDGED, record_ids
from app.verification.rules import Verdict


@dataclass(frozen=True)
class Judgement:
    """A version's standing: proven (with the latest proof's date, if the database has one),
    or why not."""

    proven: bool
    reason: str | None = None
    verified_at: datetime | None = None
    failed: bool = False  # a Verify of this content failed (not merely unverified)


@dataclass(frozen=True)
class Part:
    """One thing a unit runs: its proofs key, how the content page names it, its hash."""

    key: str
    name: str
    hash: str


def parts(loaded: LoadedSet | LoadedTopic | LoadedLab) -> list[Part]:
    """Everything a unit runs, each with the content hash its proof must be for."""
    if isinstance(loaded, LoadedLab):
        return [
            Part(
                proofs.step_key(loaded.lab.id, step.id),
                f"step `{step.id}`",
                proofs.step_hash(loaded, step.id),
            )
            for step in loaded.lab.steps
        ]
    if isinstance(loaded, LoadedSet):
        set_id = loaded.challenge_set.id
        verified = variant_sets.expanded(loaded)  # each variant of an item is proven on its own
        found = [
            Part(
                proofs.item_key(set_id, item.id),
                f"`{variant_sets.shown_name(verified, item.id)}`",
                item_hash(verified, item),
            )
            for item in verified.challenge_set.items
            if proven_by_run(item)
        ]
        runs = proofs.proof_runs([], [loaded])
    else:
        found, runs = [], proofs.proof_runs([loaded], [])
    return found + [Part(run.key, f"`{run.label}`", run.hash) for run in runs]


def _latest_judged(session: Session, found: Sequence[Part]) -> dict[str, VerificationRecord]:
    """The latest pass-or-fail record of each part for its content hash, by proofs key."""
    if not found:
        return {}
    wanted = {record_ids(part.key): part for part in found}
    rows = session.exec(
        select(VerificationRecord).where(
            col(VerificationRecord.set_id).in_({owner for owner, _name in wanted}),
            col(VerificationRecord.verdict).in_(JUDGED),
            col(VerificationRecord.content_hash).in_({part.hash for part in found}),
        )
    ).all()
    latest: dict[str, VerificationRecord] = {}
    for row in rows:
        part = wanted.get((row.set_id, row.item_id))
        if part is None or part.hash != row.content_hash:
            continue
        best = latest.get(part.key)
        if best is None or (row.verified_at, row.id or 0) > (best.verified_at, best.id or 0):
            latest[part.key] = row
    return latest


def _names(found: list[Part]) -> str:
    return ", ".join(part.name for part in found)


def judge(
    session: Session,
    loaded: LoadedSet | LoadedTopic | LoadedLab,
    file_proofs: Mapping[str, proofs.Proof],
) -> Judgement:
    """Judge one loaded unit: is everything it runs proven for this exact content?"""
    found = parts(loaded)
    records = _latest_judged(session, found)
    failed: list[Part] = []
    unproven: list[Part] = []
    when: list[datetime] = []
    for part in found:
        record = records.get(part.key)
        in_file = proofs.status(file_proofs, part.key, part.hash)
        if record is not None and record.verdict is Verdict.FAIL:
            failed.append(part)  # the latest Verify of this very content failed
        elif record is not None:
            when.append(record.verified_at)
        elif in_file == "fail":
            failed.append(part)
        elif in_file not in proofs.PROVEN:
            unproven.append(part)
    if failed:
        return Judgement(False, f"{_names(failed)} fails its Verify", failed=True)
    if unproven:
        return Judgement(False, f"not yet verified: {_names(unproven)} (Verify, then Reload)")
    return Judgement(True, verified_at=max(when) if when else None)


def unsettled(
    session: Session,
    loaded: LoadedSet | LoadedTopic | LoadedLab,
    file_proofs: Mapping[str, proofs.Proof],
) -> set[str]:
    """The proofs keys of a unit's parts that are not proven for their content (failed or
    never verified): what a version published unproven leaves unchecked."""
    found = parts(loaded)
    records = _latest_judged(session, found)
    keys: set[str] = set()
    for part in found:
        record = records.get(part.key)
        if record is not None:
            if record.verdict is Verdict.FAIL:
                keys.add(part.key)
        elif proofs.status(file_proofs, part.key, part.hash) not in proofs.PROVEN:
            keys.add(part.key)
    return keys

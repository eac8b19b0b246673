"""What a verification leaves behind: content hashes, environments, JSON records, proof lines.

Pure: the standard library, pydantic models and the verification rules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from app.verification.rules import ItemReport

if TYPE_CHECKING:
    from app.challenges.loader import LoadedSet
    from app.challenges.schema import ItemBase

ENVIRONMENT_FIELDS = ("torch", "backend", "device", "nproc", "python")
# What an item says about its own provenance (its fact tag, a proof of its explanation, a
# citation) is not what its key's runs prove: tagging an item leaves its key proven. An
# item's `proof:` is verified and hashed on its own.
PROVENANCE_FIELDS = frozenset({"fact", "proof", "source"})


def content_hash(item: BaseModel, code: str | None, fixed_code: str | None = None) -> str:
    """Hash an item's full schema dump, its code and any fixed code: any edit changes it."""
    own = set(PROVENANCE_FIELDS.intersection(type(item).model_fields))
    fields = _without_unset_provenance(item.model_dump(mode="json", exclude=own))
    dump = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(dump.encode())
    for snippet in (code, fixed_code):
        digest.update(b"\0")
        digest.update((snippet or "").encode())
    return digest.hexdigest()


def _without_unset_provenance(value: Any) -> Any:
    """Drop the provenance fields a nested item leaves unset (a lab step's questions), so
    that content written before they existed keeps its hash."""
    if isinstance(value, dict):
        return {
            key: _without_unset_provenance(inner)
            for key, inner in value.items()
            if not (key in PROVENANCE_FIELDS and inner is None)
        }
    if isinstance(value, list):
        return [_without_unset_provenance(inner) for inner in value]
    return value


def item_hash(loaded: LoadedSet, item: ItemBase) -> str:
    """Hash an item of a loaded set as it is now, with its snippets (kept on the set: loaded
    content is not changed, and a new item or snippet object is hashed anew)."""
    code, fixed = loaded.code.get(item.id), loaded.fixed_code.get(item.id)
    known = loaded.hashes.get(item.id)
    if known is not None and known[0] is item and known[1] is code and known[2] is fixed:
        return known[3]
    digest = content_hash(item, code, fixed)
    loaded.hashes[item.id] = (item, code, fixed, digest)
    return digest


def environment_of(report: ItemReport) -> dict[str, Any] | None:
    """Where the item's runs were observed (torch, backend, device, nproc, python), if it ran."""
    for observation in report.observations:
        environment = observation.result.environment
        if environment is not None:
            return {name: getattr(environment, name) for name in ENVIRONMENT_FIELDS}
    return None


def item_record(
    set_id: str, set_file: str, report: ItemReport, duration_ms: int, digest: str
) -> dict[str, Any]:
    """One item's verification as a JSON-ready record (`ranklab verify --json`)."""
    return {
        "type": "item",
        "set_id": set_id,
        "set_file": set_file,
        "item_id": report.item_id,
        "verdict": report.verdict.value,
        "reasons": list(report.problems),
        "notes": list(report.notes),
        "environment": environment_of(report),
        "duration_ms": duration_ms,
        "content_hash": digest,
    }


def summary_record(
    counts: Mapping[str, int], file_errors: Sequence[str], duration_ms: int, recorded: bool
) -> dict[str, Any]:
    """The closing record of `ranklab verify --json`: totals, file errors, overall result."""
    return {
        "type": "summary",
        "ok": not counts.get("fail") and not file_errors,
        "items": sum(counts.values()),
        "counts": dict(sorted(counts.items())),
        "file_errors": list(file_errors),
        "duration_ms": duration_ms,
        "recorded": recorded,
    }


def proof_line(torch: str, backend: str, nproc: int, verified_at: datetime) -> str:
    """The learner's line beside a proven key: where and when the executor observed it."""
    ranks = "1 rank" if nproc == 1 else f"{nproc} ranks"
    return f"Verified on torch {torch}, {backend}, {ranks}, {verified_at.date().isoformat()}"

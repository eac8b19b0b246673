"""The proofs file (`challenges/proofs.json`): what `ranklab verify --proofs` last observed for
every executable item, lab step and proof (a topic's named proofs, the inline proofs of cards and
items, its lesson's examples), keyed by content hash.

CONTENT.md reads it to show each topic's verify status without running anything; an edit to an
item changes its hash, so the item shows as unproven until it is verified again. The test that
verifies the shipped content compares its verdicts with this file, so the file cannot claim a
proof the executor would not give.

Pure: the standard library, the loader's types and the content hash.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.challenges import variants
from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic
from app.challenges.schema import InlineProof, ItemBase, proven_by_run
from app.verification import variant_sets
from app.verification.evidence import content_hash, item_hash

FILE_NAME = "proofs.json"
# What a topic's proofs can say about one executable item or lab step.
PROVEN = ("pass", "needs_gpus")
STATUSES = ("pass", "needs_gpus", "fail", "unproven")


@dataclass(frozen=True)
class Proof:
    """One verdict and the content hash it was observed for; for a proven hang, the run
    verify observed (`observed`, a RunResult as JSON), which Run it serves instead of waiting
    the snippet's whole time-out again (app.runs.recorded)."""

    verdict: str
    hash: str
    observed: dict[str, Any] | None = field(default=None, compare=False)  # not the verdict


def item_key(set_id: str, item_id: str) -> str:
    """The proofs key of a set's item."""
    return f"{set_id}/{item_id}"


def step_key(lab_id: str, step_id: str) -> str:
    """The proofs key of a lab's step."""
    return f"lab:{lab_id}/{step_id}"


def proof_key(owner: str, name: str) -> str:
    """The proofs key of a proof: `topic:<topic>:proof:<id>` for a named proof of a topic,
    `topic:<topic>:card:<id>` for a card's (or topic item's) inline proof,
    `topic:<topic>:lesson:<id>` for a lesson's example, and
    `set:<set>:item:<id>` for a set item's inline proof."""
    return f"{owner}:{name}"


@dataclass(frozen=True)
class ProofRun:
    """A proof to run: its proofs key, the file it is written in, how to name it, its code."""

    key: str
    path: str
    label: str
    proof: InlineProof
    code: str

    @property
    def hash(self) -> str:
        """The proof's content hash: its fields and its code."""
        return content_hash(self.proof, self.code)


def proof_runs(topics: Iterable[LoadedTopic], sets: Iterable[LoadedSet]) -> list[ProofRun]:
    """Every proof to run: each topic's named proofs and inline ones, then the sets' inline
    ones (a `proof: ID` names a named proof, which runs once for all that name it)."""
    runs: list[ProofRun] = []
    for loaded in topics:
        topic = loaded.topic
        for proof in topic.proofs:
            key = proof_key(f"topic:{topic.id}", f"proof:{proof.id}")
            code = loaded.proof_code[proof.id]
            runs.append(ProofRun(key, loaded.path, f"proof {proof.id}", proof, code))
        for entry in [*topic.cards, *topic.items]:
            if isinstance(entry.proof, InlineProof):
                key = proof_key(f"topic:{topic.id}", f"card:{entry.id}")
                code = loaded.entry_proof_code[entry.id]
                runs.append(ProofRun(key, loaded.path, f"{entry.id} proof", entry.proof, code))
        runs += lesson_runs(loaded)
    for loaded_set in sets:
        set_id = loaded_set.challenge_set.id
        for item in loaded_set.challenge_set.items:
            if isinstance(item.proof, InlineProof):
                key = proof_key(f"set:{set_id}", f"item:{item.id}")
                code = loaded_set.proof_code[item.id]
                runs.append(ProofRun(key, loaded_set.path, f"{item.id} proof", item.proof, code))
    return runs


def lesson_runs(loaded: LoadedTopic) -> list[ProofRun]:
    """A topic's lesson examples as proofs (`topic:<topic>:lesson:<example>`): each rank must
    end normally and print exactly the output the lesson shows."""
    lesson = loaded.topic.lesson
    if lesson is None:
        return []
    return [
        ProofRun(
            proof_key(f"topic:{loaded.topic.id}", f"lesson:{example.id}"),
            loaded.path,
            f"lesson example {example.id}",
            example.as_proof(),
            # A version stored before its payload kept a code_file's code has none: it runs
            # (and hashes) as empty, so it stays unproven instead of failing the page.
            loaded.lesson_code.get(example.id, ""),
        )
        for _section, example in lesson.examples()
    ]


def step_hash(loaded: LoadedLab, step_id: str) -> str:
    """Hash a lab step as it is now: its schema dump, the code it opens with and its solution."""
    step = next(step for step in loaded.lab.steps if step.id == step_id)
    return content_hash(step, loaded.starter_for_verify(step_id), loaded.solutions[step_id])


def current_hashes(
    sets: Iterable[LoadedSet], labs: Iterable[LoadedLab], topics: Iterable[LoadedTopic] = ()
) -> dict[str, str]:
    """The key and hash of every executable item, lab step and proof, as the content is now."""
    sets = list(sets)
    hashes = {
        item_key(loaded.challenge_set.id, item.id): item_hash(loaded, item)
        for loaded in map(variant_sets.expanded, sets)
        for item in loaded.challenge_set.items
        if proven_by_run(item)
    }
    hashes.update(
        {
            step_key(loaded.lab.id, step.id): step_hash(loaded, step.id)
            for loaded in labs
            for step in loaded.lab.steps
        }
    )
    hashes.update({run.key: run.hash for run in proof_runs(topics, sets)})
    return hashes


def load(path: Path) -> dict[str, Proof]:
    """Read a proofs file; a missing file has no proofs. Raises ValueError on a broken one."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            key: Proof(str(entry["verdict"]), str(entry["hash"]), _observed(entry))
            for key, entry in data["proofs"].items()
        }
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: not a proofs file ({error})") from error


def _observed(entry: dict[str, Any]) -> dict[str, Any] | None:
    observed = entry.get("observed")
    return observed if isinstance(observed, dict) else None


def recorded_environment(path: Path) -> tuple[str | None, str | None]:
    """The torch version and backend a proofs file was written on (None where not recorded,
    or where the file is missing or broken)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    torch, backend = data.get("torch"), data.get("backend")
    return (
        torch if isinstance(torch, str) else None,
        backend if isinstance(backend, str) else None,
    )


def save(
    path: Path, proofs: Mapping[str, Proof], torch: str | None, backend: str | None = None
) -> None:
    """Write a proofs file, sorted so that a diff shows only what changed."""
    data = {
        "about": "Written by `ranklab verify --proofs`; read by `ranklab content`.",
        "torch": torch,
        **({"backend": backend} if backend is not None else {}),
        "proofs": {
            key: {
                "verdict": proof.verdict,
                "hash": proof.hash,
                **({"observed": proof.observed} if proof.observed is not None else {}),
            }
            for key, proof in sorted(proofs.items())
        },
    }
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def merged(
    old: Mapping[str, Proof], new: Mapping[str, Proof], current: Mapping[str, str]
) -> dict[str, Proof]:
    """The old proofs updated with the new ones, keeping only keys that still exist."""
    return {key: proof for key, proof in {**old, **new}.items() if key in current}


def status(proofs: Mapping[str, Proof], key: str, digest: str) -> str:
    """What the proofs say of one item or step as it is now: its verdict, or "unproven" when
    it was never verified or changed since."""
    proof = proofs.get(key)
    return proof.verdict if proof is not None and proof.hash == digest else "unproven"


def variant_hashes(loaded: LoadedSet, item: ItemBase) -> dict[str, tuple[str, str]]:
    """Each variant of a set's item (key "" for a plain item): the proofs key it is proven
    under and the hash of its content as it is now (what a database record must match)."""
    verified = variant_sets.expanded(loaded)
    by_id = {entry.id: entry for entry in verified.challenge_set.items}
    found: dict[str, tuple[str, str]] = {}
    for variant in variants.variants_of(item):
        name = variant_sets.variant_item_id(item.id, variant.key)
        entry = by_id.get(name)
        if entry is not None:
            key = item_key(loaded.challenge_set.id, name)
            found[variant.key] = (key, item_hash(verified, entry))
    return found


def proven_variant_keys(
    proofs: Mapping[str, Proof], loaded: LoadedSet, item: ItemBase
) -> frozenset[str]:
    """The variant keys of a set's item that these proofs hold proven for exactly their
    content ("" for a plain item that is proven): the only variants a learner may be shown."""
    return frozenset(
        variant
        for variant, (key, digest) in variant_hashes(loaded, item).items()
        if status(proofs, key, digest) in PROVEN
    )


def tally(proofs: Mapping[str, Proof], hashes: Mapping[str, str]) -> Counter[str]:
    """Count the statuses of the given items and steps."""
    return Counter(status(proofs, key, digest) for key, digest in hashes.items())

"""What `ranklab verify` runs: the items asked for (`--item`), less those already proven.

An item (a lab's step, a topic's or a card's proof) is skipped when the proofs file holds a
proof of it (pass, or needs GPUs) for its content hash as it is now, observed on the same torch
and backend as the executor that would run it now. `--all` runs everything. Nothing here runs
anything, so a course with nothing changed is checked without starting an executor.

Pure: the standard library, the loader's types and the proofs file's helpers.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.challenges.loader import LoadedLab, LoadedSet
from app.challenges.schema import ItemBase, proven_by_run
from app.verification import proofs, variant_sets
from app.verification.evidence import item_hash

# A GPU executor's device nodes: where they exist an executor would run NCCL (CUDA), not gloo.
NVIDIA_CONTROL = "/dev/nvidiactl"


@dataclass(frozen=True)
class Stamp:
    """What a proof was observed on: the torch version and the backend."""

    torch: str | None
    backend: str


def local_stamp() -> Stamp:
    """The stamp of an executor started here (it runs this interpreter's torch), without
    importing torch or starting it."""
    try:
        torch: str | None = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = None
    return Stamp(torch, "nccl" if os.path.exists(NVIDIA_CONTROL) else "gloo")


def executor_stamp(health: Mapping[str, object] | None) -> Stamp:
    """The stamp of a running executor, from its health answer."""
    health = health or {}
    torch = health.get("torch")
    backend = "nccl" if int(str(health.get("cuda_devices") or 0)) > 0 else "gloo"
    return Stamp(str(torch) if torch else None, backend)


@dataclass
class Selection:
    """The sets (with only the items to run) and labs to verify, and what was left out."""

    sets: list[LoadedSet] = field(default_factory=list)
    labs: list[LoadedLab] = field(default_factory=list)
    proof_runs: list[proofs.ProofRun] = field(default_factory=list)  # topics', cards', items'
    skipped: int = 0
    unknown: list[str] = field(default_factory=list)  # --item ids that name nothing
    suggestions: dict[str, str] = field(default_factory=dict)


def _wanted(wanted: Sequence[str], *names: str) -> bool:
    return not wanted or any(name in wanted for name in names)


def recorded_stamp(path: Path) -> Stamp | None:
    """The stamp a proofs file was written on (None: no file, or one from before stamps)."""
    torch, backend = proofs.recorded_environment(path)
    return Stamp(torch, backend) if backend is not None else None


def select(
    sets: Sequence[LoadedSet],
    labs: Sequence[LoadedLab],
    wanted: Sequence[str],
    proven: Mapping[str, proofs.Proof],
    then: Stamp | None,
    now: Stamp,
    force: bool,
    proof_runs: Sequence[proofs.ProofRun] = (),
) -> Selection:
    """Choose what to verify. `wanted` holds item ids, `set/item` keys or lab ids (empty:
    everything); `proven` and `then` are the proofs file's entries and stamp."""
    trusted = {} if force or then != now else proven
    selection = Selection()
    seen: set[str] = set()
    for loaded in map(variant_sets.expanded, sets):  # each variant verified as an item
        set_id = loaded.challenge_set.id
        items: list[ItemBase] = []
        for item in loaded.challenge_set.items:
            key = proofs.item_key(set_id, item.id)
            # A variant answers to its own id and key and to its item's (`--item ITEM`).
            base = variant_sets.base_id(item.id)
            aliases = {item.id, key, set_id, base, proofs.item_key(set_id, base)}
            if not _wanted(wanted, *aliases):
                continue
            seen.update(aliases)
            if not proven_by_run(item):
                continue  # nothing to run, nothing to prove
            if _is_proven(trusted, key, item_hash(loaded, item)):
                selection.skipped += 1
                continue
            items.append(item)
        if items:
            subset = loaded.challenge_set.model_copy(update={"items": items})
            selection.sets.append(dataclasses.replace(loaded, challenge_set=subset))
    for lab in labs:
        lab_id = lab.lab.id
        if not _wanted(wanted, lab_id, f"lab:{lab_id}"):
            continue
        seen.update({lab_id, f"lab:{lab_id}"})
        keys = {step.id: proofs.step_key(lab_id, step.id) for step in lab.lab.steps}
        if all(
            _is_proven(trusted, keys[step.id], proofs.step_hash(lab, step.id))
            for step in lab.lab.steps
        ):
            selection.skipped += len(keys)
            continue
        selection.labs.append(lab)
    for run in proof_runs:
        # A key reads "topic:TOPIC:proof:PID" (or "topic:TOPIC:card:CID", "set:SET:item:IID"):
        # the run answers to it, to its owner's id (the topic or set), to the id it proves and
        # to "OWNER/ID", so `--item SET` verifies a set's inline proofs with its keys.
        aliases = {run.key, *_proof_aliases(run.key)}
        if not _wanted(wanted, *aliases):
            continue
        seen.update(aliases)
        if _is_proven(trusted, run.key, run.hash):
            selection.skipped += 1
            continue
        selection.proof_runs.append(run)
    names = sorted(seen | _all_names(sets, labs))
    for name in wanted:
        if name not in seen:
            selection.unknown.append(name)
            close = difflib.get_close_matches(name, names, n=1)
            if close:
                selection.suggestions[name] = close[0]
    return selection


def _proof_aliases(key: str) -> set[str]:
    parts = key.split(":", 3)
    if len(parts) != 4:
        return set()
    _, owner, _, name = parts
    return {owner, name, f"{owner}/{name}"}


def _all_names(sets: Sequence[LoadedSet], labs: Sequence[LoadedLab]) -> set[str]:
    names = {lab.lab.id for lab in labs}
    for loaded in sets:
        names.add(loaded.challenge_set.id)
        names.update(item.id for item in loaded.challenge_set.items)
    return names


def _is_proven(proven: Mapping[str, proofs.Proof], key: str, digest: str) -> bool:
    return proofs.status(proven, key, digest) in proofs.PROVEN

"""What `ranklab verify` and the staff Verify buttons both run, so that they cannot disagree.

`choose` picks what to verify as the CLI does: the items, lab steps and proofs asked for, less
those the proofs file holds as proven for their content on this executor's torch and backend
(unless forced). `run` verifies the choice in the CLI's order (labs, then the sets' items, then
the proofs), each with the same repeats, perturbed scheduling, executor-fault retries and claim
rules (service.py, rules.py). `Outcome.lines` is the verdict as the CLI prints it; the web shows
the same lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic
from app.challenges.schema import ItemBase
from app.executor_client import ExecutorClient
from app.labs import verify as lab_verify
from app.labs.schema import LabStep
from app.runs.service import run_request
from app.verification import batch, incremental, packing, proofs, variant_sets
from app.verification import service as verification
from app.verification.rules import ItemReport, Verdict, claims_hang, expects_hang

# Runs per snippet: enough for a claim true only by luck to meet a perturbed order that breaks
# it (service.schedule), on the CLI and on the web alike.
REPEATS = 3
ITEM, LAB_STEP, PROOF = "item", "lab_step", "proof"
LABELS = {"pass": "PASS", "fail": "FAIL", "needs_gpus": "GPU "}


@dataclass(frozen=True)
class Outcome:
    """One verified thing (a set's item, a lab's step, a proof): its verdict and evidence,
    where it is written, and the content hash it was verified for."""

    kind: str  # ITEM, LAB_STEP or PROOF
    key: str  # its key in the proofs file
    path: str
    name: str  # what follows the path in the verdict line
    report: ItemReport  # report.item_id names it within one verification
    duration_ms: int
    content_hash: str
    verified: batch.Verified | None = None  # a set's item, as the database records it

    @property
    def recordable(self) -> bool:
        """Whether the verdict says something about the content (the executor did not spoil
        its runs, and there was something to run)."""
        return not self.report.executor_failed and self.report.verdict is not Verdict.NOT_EXECUTABLE

    @property
    def runs(self) -> int:
        """How many runs the verdict rests on (a lab step's runs are not kept)."""
        return len(self.report.observations)

    def lines(self) -> list[str]:
        """The verdict as `ranklab verify` prints it (verdict_lines)."""
        return verdict_lines(self.path, self.name, self.report)


def verdict_lines(path: str, name: str, report: ItemReport) -> list[str]:
    """A verdict as `ranklab verify` prints it: a head line, the reasons and notes, and for a
    failure what the first run showed, rank by rank (nothing for an item with nothing to run)."""
    if report.verdict is Verdict.NOT_EXECUTABLE:
        return []
    lines = [f"{LABELS[report.verdict.value]} {path} {name}"]
    lines += [f"     {line}" for line in report.problems + report.notes]
    if report.verdict is Verdict.FAIL and report.observations:
        observed = report.observations[0].result
        lines.append(f"     observed ({observed.status.value}, {observed.duration_ms} ms):")
        lines += [f"       {verification.describe_rank(rank)}" for rank in observed.ranks]
    return lines


def choose(
    sets: Sequence[LoadedSet],
    labs: Sequence[LoadedLab],
    topics: Sequence[LoadedTopic],
    wanted: Sequence[str],
    proofs_source: Path | None,
    run_all: bool,
    now: Callable[[], incremental.Stamp],
    warn: Callable[[str], None],
) -> incremental.Selection:
    """What to verify: the items, steps and proofs named in `wanted` (all when empty), less
    those proven in `proofs_source` for their content as it is now on the same torch and
    backend as `now()` (asked only when something could be skipped), unless run_all."""
    proven: dict[str, proofs.Proof] = {}
    then = None
    if proofs_source is not None and not run_all:
        try:
            proven = proofs.load(proofs_source)
        except ValueError as error:
            warn(f"running everything: {error}")
        then = incremental.recorded_stamp(proofs_source)
    stamp = incremental.Stamp(None, "") if run_all or not proven else now()
    runs = proofs.proof_runs(topics, sets)
    return incremental.select(sets, labs, wanted, proven, then, stamp, run_all, runs)


def names(selection: incremental.Selection) -> dict[str, tuple[str, str]]:
    """Each thing the selection runs, in the order `run` yields them: the name its report
    carries (report.item_id), and the file and name its verdict line shows."""
    shown: dict[str, tuple[str, str]] = {}
    for lab in selection.labs:
        for step in lab.lab.steps:
            shown[step.id] = (lab.path, f"{lab.lab.id} step {step.id}")
    for loaded in selection.sets:
        for item in loaded.challenge_set.items:
            shown[item.id] = (loaded.path, variant_sets.shown_name(loaded, item.id))
    for proof_run in selection.proof_runs:
        shown[proof_run.label] = (proof_run.path, proof_run.label)
    return shown


def run(
    client: ExecutorClient,
    selection: incremental.Selection,
    repeats: int = REPEATS,
    jobs: int = 1,
) -> Iterator[Outcome]:
    """Verify what was chosen and yield it in order (names' order: each lab's steps, each
    set's items, then the proofs); `jobs` at a time, packed on the slots the costliest first
    (packing.py)."""
    facts = batch.executor_facts(client)
    # One verify's runs of a request serve every claim about it (service.SharedRuns); a claim
    # whose request is already claimed costs next to nothing and queues last, so that it finds
    # the runs made instead of waiting for them on a slot.
    shared = verification.SharedRuns()
    requested: set[str] = set()

    def once(request: str, cost: float) -> float:
        if request in requested:
            return 0.0
        requested.add(request)
        return cost

    work: list[packing.Work[Outcome]] = []
    for lab in selection.labs:
        for step in lab.lab.steps:
            cost = (repeats + 1) * packing.run_cost(lab.solutions[step.id], step.launch.nproc)
            work.append(packing.Work(partial(_lab_step, client, lab, step, facts, repeats), cost))
    for loaded in selection.sets:
        for item in loaded.challenge_set.items:
            waits, cost = _item_cost(loaded, item, repeats)
            code = loaded.code.get(item.id)
            if code is not None and getattr(item, "launch", None) is not None:
                cost = once(_request(item, code), cost)
                fixed = loaded.fixed_code.get(item.id)
                if fixed is not None:
                    requested.add(_request(item, fixed))
            job = partial(_item, client, loaded, item, facts, repeats, shared)
            work.append(packing.Work(job, cost, waits))
    for proof_run in selection.proof_runs:
        proof = proof_run.proof
        hangs = expects_hang(proof.outcome)
        cost = packing.snippet_cost(
            proof_run.code, None, proof.launch.nproc, repeats, proof.launch.timeout_s, hangs
        )
        cost = once(_request(proof, proof_run.code), cost)
        job = partial(_proof, client, proof_run, facts, repeats, shared)
        work.append(packing.Work(job, cost, packing.mostly_waits(proof_run.code, hangs)))
    return packing.in_order(work, jobs)


def _request(launched: Any, code: str) -> str:
    """The request a claim's runs make (what SharedRuns shares them by)."""
    return run_request(launched, code, use_cache=False).model_dump_json()


def _item_cost(loaded: LoadedSet, item: ItemBase, repeats: int) -> tuple[bool, float]:
    """Whether an item's runs mostly wait (its key says the snippet hangs, or it sleeps), and
    its expected cost (packing.py)."""
    code = loaded.code.get(item.id)
    launch = getattr(item, "launch", None)
    if code is None or launch is None:
        return False, 0.0
    hangs = claims_hang(item)
    fixed = loaded.fixed_code.get(item.id)
    cost = packing.snippet_cost(code, fixed, launch.nproc, repeats, launch.timeout_s, hangs)
    return packing.mostly_waits(code, hangs), cost


def _lab_step(
    client: ExecutorClient,
    loaded: LoadedLab,
    step: LabStep,
    facts: batch.ExecutorFacts,
    repeats: int,
) -> Outcome:
    started = time.monotonic()
    done = lab_verify.verify_step(client, loaded, step, facts, repeats)
    report = ItemReport(step.id, done.verdict, problems=list(done.problems))
    return Outcome(
        LAB_STEP,
        proofs.step_key(loaded.lab.id, step.id),
        loaded.path,
        f"{loaded.lab.id} step {step.id}",
        report,
        _since(started),
        proofs.step_hash(loaded, step.id),
    )


def _item(
    client: ExecutorClient,
    loaded: LoadedSet,
    item: ItemBase,
    facts: batch.ExecutorFacts,
    repeats: int,
    shared: verification.SharedRuns,
) -> Outcome:
    verified = batch.verify_timed(client, loaded, item, repeats, facts, shared)
    return Outcome(
        ITEM,
        proofs.item_key(loaded.challenge_set.id, item.id),
        loaded.path,
        variant_sets.shown_name(loaded, verified.report.item_id),
        verified.report,
        verified.duration_ms,
        verified.content_hash,
        verified,
    )


def _proof(
    client: ExecutorClient,
    run: proofs.ProofRun,
    facts: batch.ExecutorFacts,
    repeats: int,
    shared: verification.SharedRuns,
) -> Outcome:
    proven = batch.verify_proof_timed(client, run, repeats, facts, shared)
    return Outcome(PROOF, run.key, run.path, run.label, proven.report, proven.duration_ms, run.hash)


def _since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)

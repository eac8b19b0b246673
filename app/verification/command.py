"""`ranklab verify`: prove every key on an executor, print the verdicts, record them."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from app import embedded
from app.challenges import loader
from app.config import Settings
from app.executor_client import HttpExecutorClient
from app.labs import verify as lab_verify
from app.verification import batch, evidence, incremental, proofs, records
from app.verification import service as verification
from app.verification.batch import Verified
from app.verification.rules import ItemReport, Verdict


def verify(
    path: Path,
    *,
    executor_url: str | None = None,
    repeats: int = 3,
    trusted: bool = False,
    jobs: int = 1,
    as_json: bool = False,
    database_url: str | None = None,
    proofs_path: Path | None = None,
    items: Sequence[str] = (),
    run_all: bool = False,
) -> int:
    """Verify the items under path (those named in `items`, else all); return 1 on any failed
    key or broken file, or 2 when an item asked for does not exist, else 0.

    An item proven and unchanged since (see incremental.py; the proofs file read is
    proofs_path, else the folder's proofs.json) is skipped unless run_all. With proofs_path,
    the verdicts (with each item's content hash) are merged into that proofs file, which
    `ranklab content` reads."""
    started = time.monotonic()
    report = loader.load_path(path)
    for error in report.errors:
        print(error, file=sys.stderr)
    selection = _select(path, report, executor_url, proofs_path, items, run_all)
    if selection.unknown:
        for name in selection.unknown:
            hint = selection.suggestions.get(name)
            print(
                f"verify: no item, set or lab {name!r} under {path}"
                + (f"; did you mean {hint!r}?" if hint else ""),
                file=sys.stderr,
            )
        return 2
    engine = None
    if database_url is not None:
        engine, where = records.recording_engine(database_url)
        if engine is None:
            print(f"verify: not recording results: {where}", file=sys.stderr)
    counts: Counter[str] = Counter()
    if selection.skipped:
        counts["skipped"] = selection.skipped
        if not as_json:
            print(f"verify: {selection.skipped} proven and unchanged, skipped (--all runs them)")
    observed: dict[str, proofs.Proof] = {}
    labs = {loaded.lab.id: loaded for loaded in report.labs}
    torch = backend = None
    try:
        # Nothing to run: no executor is started (a course with nothing changed takes seconds).
        with (
            _executor(executor_url, trusted, jobs)
            if selection.sets or selection.labs or selection.proof_runs
            else contextlib.nullcontext(None)
        ) as url:
            client = HttpExecutorClient(url or "", token=Settings().executor_token)
            facts = batch.executor_facts(client) if url else batch.ExecutorFacts()
            stamp = incremental.executor_stamp(client.health() if url else None)
            torch, backend = stamp.torch, stamp.backend
            for step in lab_verify.verify_labs(client, selection.labs, facts, repeats):
                counts[step.verdict.value] += 1
                digest = proofs.step_hash(labs[step.lab_id], step.step_id)
                observed[proofs.step_key(step.lab_id, step.step_id)] = proofs.Proof(
                    step.verdict.value, digest
                )
                if as_json:
                    print(_json_line(_step_record(step, digest)), flush=True)
                else:
                    _print_step(step)
            for verified in batch.verify_in_order(client, selection.sets, repeats, jobs):
                counts[verified.report.verdict.value] += 1
                recordable = not verified.report.executor_failed
                if recordable and verified.report.verdict is not Verdict.NOT_EXECUTABLE:
                    key = proofs.item_key(verified.loaded.challenge_set.id, verified.item.id)
                    observed[key] = proofs.Proof(
                        verified.report.verdict.value, verified.content_hash
                    )
                if engine is not None and not _record(engine, verified):
                    engine.dispose()
                    engine = None
                if as_json:
                    print(_json_line(_item_record(verified)), flush=True)
                else:
                    _print_human(verified)
            # Proofs of cards, cheat-sheet lines and explanations run as keys do, after them.
            for done in batch.verify_proofs_in_order(client, selection.proof_runs, repeats, jobs):
                counts[done.report.verdict.value] += 1
                observed[done.run.key] = proofs.Proof(done.report.verdict.value, done.run.hash)
                if as_json:
                    print(_json_line(_proof_record(done)), flush=True)
                else:
                    _print_proof(done)
    finally:
        if engine is not None:
            engine.dispose()
    if proofs_path is not None and (observed or not selection.skipped):
        _write_proofs(proofs_path, observed, torch, backend)
    errors = [str(error) for error in report.errors]
    if as_json:
        elapsed = round((time.monotonic() - started) * 1000)
        print(_json_line(evidence.summary_record(counts, errors, elapsed, engine is not None)))
    else:
        summary = ", ".join(f"{count} {verdict}" for verdict, count in sorted(counts.items()))
        print(f"verify: {summary or 'nothing to run'}; {len(errors)} file error(s)")
    return 1 if counts["fail"] or errors else 0


def _select(
    path: Path,
    report: loader.LoadReport,
    executor_url: str | None,
    proofs_path: Path | None,
    items: Sequence[str],
    run_all: bool,
) -> incremental.Selection:
    """What to run: the items asked for, less those proven for their content on this executor."""
    source = proofs_path or (path / proofs.FILE_NAME if path.is_dir() else None)
    proven: dict[str, proofs.Proof] = {}
    then = None
    if source is not None and not run_all:
        try:
            proven = proofs.load(source)
        except ValueError as error:
            print(f"verify: running everything: {error}", file=sys.stderr)
        then = incremental.recorded_stamp(source)
    if run_all or not proven:
        now = incremental.Stamp(None, "")  # nothing is skipped: no need to ask the executor
    elif executor_url:
        now = incremental.executor_stamp(
            HttpExecutorClient(executor_url, token=Settings().executor_token).health()
        )
    else:
        now = incremental.local_stamp()
    runs = proofs.proof_runs(report.topics, report.sets)
    return incremental.select(report.sets, report.labs, items, proven, then, now, run_all, runs)


def _write_proofs(
    path: Path, observed: dict[str, proofs.Proof], torch: str | None, backend: str | None
) -> None:
    """Merge what was observed into the proofs file, dropping items that no longer exist
    under the file's folder."""
    everything = loader.load_path(path.parent)
    current = proofs.current_hashes(everything.sets, everything.labs, everything.topics)
    try:
        old = proofs.load(path)
    except ValueError as error:
        print(f"verify: replacing {error}", file=sys.stderr)
        old = {}
    proofs.save(path, proofs.merged(old, observed, current), torch, backend)
    print(f"verify: proofs written to {path}", file=sys.stderr)


def _executor(url: str | None, trusted: bool, jobs: int) -> AbstractContextManager[str]:
    """The executor to use: the one given, or a private one with a slot per job."""
    if url:
        return contextlib.nullcontext(url)
    return embedded.temporary_executor(trusted=trusted, slots=jobs if jobs > 1 else None)


def _record(engine: Engine, verified: Verified) -> bool:
    """Record one verdict; False once recording fails (the rest is not recorded then)."""
    try:
        records.save_verified(engine, verified)
    except SQLAlchemyError as error:
        print(f"verify: stopped recording results: {error}", file=sys.stderr)
        return False
    return True


def _item_record(verified: Verified) -> dict[str, Any]:
    return evidence.item_record(
        verified.loaded.challenge_set.id,
        verified.loaded.path,
        verified.report,
        verified.duration_ms,
        verified.content_hash,
    )


def _proof_record(done: batch.VerifiedProof) -> dict[str, Any]:
    report = done.report
    return {
        "type": "proof",
        "key": done.run.key,
        "path": done.run.path,
        "proof": done.run.label,
        "verdict": report.verdict.value,
        "reasons": list(report.problems),
        "notes": list(report.notes),
        "environment": evidence.environment_of(report),
        "duration_ms": done.duration_ms,
        "content_hash": done.run.hash,
    }


def _print_proof(done: batch.VerifiedProof) -> None:
    """Print one proof's verdict, its reasons and, for a failure, what the runs showed."""
    label = {"pass": "PASS", "fail": "FAIL", "needs_gpus": "GPU "}[done.report.verdict.value]
    print(f"{label} {done.run.path} {done.run.label}", flush=True)
    _print_reasons_and_evidence(done.report)


def _step_record(step: lab_verify.StepReport, digest: str) -> dict[str, Any]:
    return {
        "type": "lab_step",
        "kind": "lab_step",
        "lab": step.lab_id,
        "path": step.path,
        "step": step.step_id,
        "verdict": step.verdict.value,
        "problems": step.problems,
        "content_hash": digest,
    }


def _print_step(step: lab_verify.StepReport) -> None:
    """Print one lab step's verdict and its reasons."""
    label = {"pass": "PASS", "fail": "FAIL", "needs_gpus": "GPU "}[step.verdict.value]
    print(f"{label} {step.path} {step.lab_id} step {step.step_id}", flush=True)
    for line in step.problems:
        print(f"     {line}")


def _json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False)


def _print_human(verified: Verified) -> None:
    """Print one item's verdict, its reasons and, for a failure, the observed evidence."""
    item_report = verified.report
    if item_report.verdict is Verdict.NOT_EXECUTABLE:
        return
    label = {"pass": "PASS", "fail": "FAIL", "needs_gpus": "GPU "}[item_report.verdict]
    print(f"{label} {verified.loaded.path} {item_report.item_id}", flush=True)
    _print_reasons_and_evidence(item_report)


def _print_reasons_and_evidence(item_report: ItemReport) -> None:
    for line in item_report.problems + item_report.notes:
        print(f"     {line}")
    if item_report.verdict is Verdict.FAIL and item_report.observations:
        observed = item_report.observations[0].result
        print(f"     observed ({observed.status.value}, {observed.duration_ms} ms):")
        for rank in observed.ranks:
            print(f"       {verification.describe_rank(rank)}")

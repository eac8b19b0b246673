"""`ranklab verify`: prove every key on an executor, print the verdicts, record them."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.challenges import course, loader
from app.config import Settings
from app.executor_client import HttpExecutorClient
from app.verification import evidence, hangs, incremental, packing, pipeline, proofs, records
from app.verification.batch import Verified

if TYPE_CHECKING:
    # Imported where an executor starts: it imports the whole web app (~1.7 s), which a verify
    # with nothing changed (no executor) does not need.
    from app import embedded


def verify(
    path: Path,
    *,
    executor_url: str | None = None,
    repeats: int = pipeline.REPEATS,
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
    # With --all everything runs: the private executor starts (seconds, in other processes)
    # while the course loads, not after. Otherwise only once something is known to need it:
    # a course with nothing changed starts none.
    early = executor_url is None and run_all
    if early:
        from app import embedded
    with (
        embedded.starting_executor(trusted=trusted, slots=_slots(jobs), warm_compile=True)
        if early
        else contextlib.nullcontext(None)
    ) as starting:
        return _verify(
            path, started, starting, executor_url=executor_url, repeats=repeats,
            trusted=trusted, jobs=jobs, as_json=as_json, database_url=database_url,
            proofs_path=proofs_path, items=items, run_all=run_all,
        )  # fmt: skip


def _verify(
    path: Path,
    started: float,
    starting: embedded.StartingExecutor | None,
    *,
    executor_url: str | None,
    repeats: int,
    trusted: bool,
    jobs: int,
    as_json: bool,
    database_url: str | None,
    proofs_path: Path | None,
    items: Sequence[str],
    run_all: bool,
) -> int:
    folder = course.load(path)
    report = folder.report
    for error in report.errors:
        print(error, file=sys.stderr)
    # A folder of a course is proven against the course's proofs file (its items' entries).
    source = proofs_path or (folder.course / proofs.FILE_NAME if folder.course.is_dir() else None)
    selection = _select(report, executor_url, source, items, run_all)
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
    torch = backend = None
    try:
        # Nothing to run: no executor is started (a course with nothing changed takes seconds).
        with (
            _executor(executor_url, trusted, jobs, starting)
            if selection.sets or selection.labs or selection.proof_runs
            else contextlib.nullcontext(None)
        ) as url:
            client = HttpExecutorClient(url or "", token=Settings().executor_token)
            stamp = incremental.executor_stamp(client.health() if url else None)
            torch, backend = stamp.torch, stamp.backend
            for outcome in pipeline.run(client, selection, repeats, jobs):
                counts[outcome.report.verdict.value] += 1
                if outcome.recordable:
                    verdict = outcome.report.verdict.value
                    runs = [seen.result for seen in outcome.report.observations]
                    observed[outcome.key] = proofs.Proof(
                        verdict, outcome.content_hash, hangs.to_record(verdict, runs)
                    )
                verified = outcome.verified
                if verified is not None and engine is not None and not _record(engine, verified):
                    engine.dispose()
                    engine = None
                if as_json:
                    print(_json_line(_record_of(outcome)), flush=True)
                else:
                    lines = outcome.lines()
                    if lines:
                        print("\n".join(lines), flush=True)
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
    report: loader.LoadReport,
    executor_url: str | None,
    source: Path | None,
    items: Sequence[str],
    run_all: bool,
) -> incremental.Selection:
    """What to run: the items asked for, less those proven for their content on this executor
    (as the proofs file `source` says)."""

    def now() -> incremental.Stamp:
        if executor_url:
            client = HttpExecutorClient(executor_url, token=Settings().executor_token)
            return incremental.executor_stamp(client.health())
        return incremental.local_stamp()

    return pipeline.choose(
        report.sets, report.labs, report.topics, items, source, run_all, now,
        lambda message: print(f"verify: {message}", file=sys.stderr),
    )  # fmt: skip


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


def _executor(
    url: str | None, trusted: bool, jobs: int, starting: embedded.StartingExecutor | None
) -> AbstractContextManager[str]:
    """The executor to use: the one given, the private one already starting, or a private one
    started now."""
    if url:
        return contextlib.nullcontext(url)
    if starting is not None:
        return contextlib.nullcontext(starting.ready())
    from app import embedded

    return embedded.temporary_executor(trusted=trusted, slots=_slots(jobs), warm_compile=True)


def default_jobs(executor_url: str | None) -> int:
    """Items verified at once when --jobs is not given: one per core and one more with the
    private executor (a run's ranks wait on each other part of the time, so a third job on 2
    cores keeps both busy: the whole course from scratch took 160.6 s with 3 on 2 cores, about
    a fifth less than with 2), at most 8; 1 with a given executor, whose slots others share."""
    if executor_url:
        return 1
    return min(8, (os.cpu_count() or 1) + 1)


def _slots(jobs: int) -> int | None:
    """A private executor's slots: one per job, and spare slots for the runs that wait blocked
    at their limit (packing.py)."""
    return jobs + packing.SPARE_SLOTS if jobs > 1 else None


def _record(engine: Engine, verified: Verified) -> bool:
    """Record one verdict; False once recording fails (the rest is not recorded then)."""
    try:
        records.save_verified(engine, verified)
    except SQLAlchemyError as error:
        print(f"verify: stopped recording results: {error}", file=sys.stderr)
        return False
    return True


def _record_of(outcome: pipeline.Outcome) -> dict[str, Any]:
    """The JSON record of one outcome (`--json`); an item's or proof's with the number of runs
    its verdict rests on (a lab step's runs are judged one by one, not kept)."""
    report = outcome.report
    if outcome.kind == pipeline.LAB_STEP:
        lab_id, step_id = outcome.key.removeprefix("lab:").split("/", 1)
        return {
            "type": "lab_step",
            "kind": "lab_step",
            "lab": lab_id,
            "path": outcome.path,
            "step": step_id,
            "verdict": report.verdict.value,
            "problems": list(report.problems),
            "content_hash": outcome.content_hash,
        }
    if outcome.kind == pipeline.PROOF:
        record = {
            "type": "proof",
            "key": outcome.key,
            "path": outcome.path,
            "proof": outcome.name,
            "verdict": report.verdict.value,
            "reasons": list(report.problems),
            "notes": list(report.notes),
            "environment": evidence.environment_of(report),
            "duration_ms": outcome.duration_ms,
            "content_hash": outcome.content_hash,
        }
    else:
        set_id = outcome.key.split("/", 1)[0]
        record = evidence.item_record(
            set_id, outcome.path, report, outcome.duration_ms, outcome.content_hash
        )
    return {**record, "runs": outcome.runs}


def _json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False)

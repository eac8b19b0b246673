"""Verification records in the database: one per verified item, and which keys stand proven."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import and_, bindparam, func, make_url, or_
from sqlalchemy import select as select_columns
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select

from app import metrics, migrations, reads
from app.challenges.loader import LoadedSet
from app.challenges.schema import ItemBase, proven_by_run
from app.db import make_engine, utcnow
from app.verification import evidence
from app.verification.models import VerificationRecord
from app.verification.rules import ItemReport, Verdict

if TYPE_CHECKING:
    from app.verification.batch import Verified

# A "needs GPUs" record says nothing about the key, so it neither proves nor refutes it.
JUDGED = (Verdict.PASS, Verdict.FAIL)


def save(
    session: Session,
    set_id: str,
    digest: str,
    report: ItemReport,
    duration_ms: int,
    verified_at: datetime,
) -> VerificationRecord:
    """Record one item's verdict for this exact content, with where it ran."""
    environment = evidence.environment_of(report) or {}
    record = VerificationRecord(
        set_id=set_id,
        item_id=report.item_id,
        content_hash=digest,
        verdict=report.verdict,
        verified_at=verified_at,
        duration_ms=duration_ms,
        **environment,
    )
    session.add(record)
    session.commit()
    metrics.count_verdict(report.verdict.value)
    return record


def record_ids(key: str) -> tuple[str, str]:
    """Where a proofs key's verdicts are recorded (set_id, item_id): a set's item under its set,
    a lab's step under `lab:<lab>`, a proof under its owner (`topic:<topic>`, `set:<set>`) with
    its name (`lesson:<example>`). An owner with a colon is never a set's id (a slug)."""
    if key.startswith(("topic:", "set:")):
        kind, owner, name = key.split(":", 2)
        return f"{kind}:{owner}", name
    owner, _slash, name = key.rpartition("/")
    return owner, name


def save_proof(
    engine: Engine, key: str, digest: str, report: ItemReport, duration_ms: int
) -> VerificationRecord | None:
    """Record a lab step's or a proof's verdict for this exact content (the browser's Verify),
    so that the publish gate counts it as `proofs.json` would."""
    if report.verdict is Verdict.NOT_EXECUTABLE or report.executor_failed:
        return None
    set_id, item_id = record_ids(key)
    with Session(engine, expire_on_commit=False) as session:
        named = ItemReport(item_id, report.verdict, observations=report.observations)
        return save(session, set_id, digest, named, duration_ms, utcnow())


def save_with_engine(
    engine: Engine,
    set_id: str,
    digest: str,
    report: ItemReport,
    duration_ms: int,
    verified_at: datetime,
) -> VerificationRecord:
    """Record one verdict in a short transaction of its own (never open while runs happen)."""
    with Session(engine, expire_on_commit=False) as session:
        return save(session, set_id, digest, report, duration_ms, verified_at)


def proven(
    session: Session, set_id: str, hashes: Mapping[str, str]
) -> dict[str, VerificationRecord]:
    """Items (id -> current content hash) whose latest judged record is a pass, in one query."""
    if not hashes:
        return {}
    record = VerificationRecord
    ranked = (
        select(
            col(record.id).label("id"),
            func.row_number()
            .over(
                partition_by=col(record.item_id),
                order_by=(col(record.verified_at).desc(), col(record.id).desc()),
            )
            .label("position"),
        )
        .where(
            record.set_id == set_id,
            col(record.verdict).in_(JUDGED),
            or_(
                *(
                    and_(col(record.item_id) == item_id, col(record.content_hash) == digest)
                    for item_id, digest in hashes.items()
                )
            ),
        )
        .subquery()
    )
    latest = (
        select(record).join(ranked, col(record.id) == ranked.c.id).where(ranked.c.position == 1)
    )
    return {row.item_id: row for row in session.exec(latest) if row.verdict is Verdict.PASS}


def proof_lines(session: Session, loaded: LoadedSet, items: Sequence[ItemBase]) -> dict[str, str]:
    """Give the "Verified on …" line of each executable item whose current content is proven."""
    hashes = {item.id: evidence.item_hash(loaded, item) for item in items if proven_by_run(item)}
    return {
        item_id: evidence.proof_line(record.torch, record.backend, record.nproc, record.verified_at)
        for item_id, record in proven(session, loaded.challenge_set.id, hashes).items()
        if record.torch and record.backend and record.nproc
    }


# The question page's "Verified on" line for its one revealed key, on every view of a closed
# question: compiled once and run on the driver (app.reads), as `proven` decides for one item.
_RECORDS = VerificationRecord.__table__  # type: ignore[attr-defined]
_LATEST_JUDGED = reads.Query(
    select_columns(*_RECORDS.columns)
    .where(
        _RECORDS.c.set_id == bindparam("set_id"),
        _RECORDS.c.item_id == bindparam("item_id"),
        _RECORDS.c.content_hash == bindparam("content_hash"),
        or_(*(_RECORDS.c.verdict == verdict for verdict in JUDGED)),
    )
    .order_by(_RECORDS.c.verified_at.desc(), _RECORDS.c.id.desc())
    .limit(1),
    VerificationRecord,
)


def proof_line_of(reader: reads.Reader, loaded: LoadedSet, item: ItemBase) -> str | None:
    """proof_lines for one item: its "Verified on" line, or None."""
    if not proven_by_run(item):
        return None
    digest = evidence.item_hash(loaded, item)
    row = reader.first(
        _LATEST_JUDGED, set_id=loaded.challenge_set.id, item_id=item.id, content_hash=digest
    )
    if row is None:
        return None
    record: VerificationRecord = _LATEST_JUDGED.instances(row)[0]
    if record.verdict is not Verdict.PASS or not (record.torch and record.backend):
        return None
    if not record.nproc:
        return None
    return evidence.proof_line(record.torch, record.backend, record.nproc, record.verified_at)


def recording_engine(database_url: str) -> tuple[Engine | None, str]:
    """Open the database for recording if it exists and is at the latest revision, else say why."""
    shown = make_url(database_url).render_as_string(hide_password=True)
    if database_url.startswith("sqlite"):
        path = make_url(database_url).database
        if not path or path == ":memory:" or not Path(path).exists():
            return None, f"{shown} does not exist (run `ranklab db upgrade`)"
    engine = make_engine(database_url)
    try:
        if migrations.at_head(engine):
            return engine, shown
        reason = f"{shown} is not at the latest revision (run `ranklab db upgrade`)"
    except SQLAlchemyError as error:
        reason = f"{shown} cannot be read ({type(error).__name__})"
    engine.dispose()
    return None, reason


def save_verified(engine: Engine, verified: Verified) -> None:
    """Record a verified item (items with nothing to run have no verdict to keep, nor has an
    item whose runs the executor spoiled: that verdict is the executor's, not the item's)."""
    if verified.report.verdict is Verdict.NOT_EXECUTABLE or verified.report.executor_failed:
        return
    save_with_engine(
        engine,
        verified.loaded.challenge_set.id,
        verified.content_hash,
        verified.report,
        verified.duration_ms,
        utcnow(),
    )

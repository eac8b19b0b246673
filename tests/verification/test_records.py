"""Verification records on SQLite and PostgreSQL: written per item, read back as proofs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlmodel import Session, select

from app import migrations, reads
from app.challenges.loader import LoadedSet, load_path
from app.db import make_engine
from app.verification import evidence, records
from app.verification.models import VerificationRecord
from app.verification.rules import ItemReport, Observation, Verdict
from tests.conftest import TEST_CHALLENGES
from tests.support.fake_executor import canned_result

DAY = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


@pytest.fixture
def session(database_url: str) -> Iterator[Session]:
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        yield session
    engine.dispose()


@pytest.fixture
def runs_set() -> LoadedSet:
    report = load_path(TEST_CHALLENGES / "runs")
    assert report.errors == []
    return report.sets[0]


def report(verdict: Verdict, item_id: str = "all-reduce") -> ItemReport:
    observed = [] if verdict is Verdict.NEEDS_GPUS else [Observation(canned_result("1.0\n"))]
    return ItemReport(item_id, verdict, observations=observed)


def current_hash(loaded: LoadedSet) -> str:
    item = loaded.challenge_set.items[0]
    return evidence.item_hash(loaded, item)


def save(session: Session, verdict: Verdict, digest: str, when: datetime) -> VerificationRecord:
    return records.save(session, "test-runs", digest, report(verdict), 420, when)


def test_a_record_keeps_the_verdict_content_and_environment(session):
    save(session, Verdict.PASS, "h1", DAY)
    stored = session.exec(select(VerificationRecord)).one()
    assert (stored.set_id, stored.item_id, stored.content_hash) == ("test-runs", "all-reduce", "h1")
    assert stored.verdict is Verdict.PASS and stored.duration_ms == 420
    assert (stored.torch, stored.backend, stored.device, stored.nproc, stored.python) == (
        "2.13.0+cpu",
        "gloo",
        "cpu",
        1,
        "3.11.7",
    )
    assert stored.verified_at == DAY


def test_an_item_that_did_not_run_is_recorded_without_an_environment(session):
    save(session, Verdict.NEEDS_GPUS, "h1", DAY)
    stored = session.exec(select(VerificationRecord)).one()
    assert stored.verdict is Verdict.NEEDS_GPUS and stored.torch is None and stored.nproc is None


def test_the_latest_judged_record_for_the_current_content_decides(session):
    save(session, Verdict.FAIL, "h1", DAY)
    save(session, Verdict.PASS, "h1", DAY + timedelta(hours=1))
    assert set(records.proven(session, "test-runs", {"all-reduce": "h1"})) == {"all-reduce"}
    save(session, Verdict.FAIL, "h1", DAY + timedelta(hours=2))
    assert records.proven(session, "test-runs", {"all-reduce": "h1"}) == {}


def test_a_record_for_other_content_proves_nothing(session):
    save(session, Verdict.PASS, "old-content", DAY)
    assert records.proven(session, "test-runs", {"all-reduce": "edited-content"}) == {}
    assert records.proven(session, "other-set", {"all-reduce": "old-content"}) == {}


def test_needing_gpus_later_neither_proves_nor_refutes_a_pass(session):
    save(session, Verdict.PASS, "h1", DAY)
    save(session, Verdict.NEEDS_GPUS, "h1", DAY + timedelta(hours=1))
    assert set(records.proven(session, "test-runs", {"all-reduce": "h1"})) == {"all-reduce"}


def test_proof_lines_for_many_items_take_one_query(session, database_url, runs_set):
    digest = current_hash(runs_set)
    save(session, Verdict.PASS, digest, DAY)
    item = runs_set.challenge_set.items[0]
    for other in ("b", "c", "d"):
        records.save(session, "test-runs", f"h-{other}", report(Verdict.PASS, other), 1, DAY)
    statements: list[str] = []
    event.listen(session.get_bind(), "before_cursor_execute", lambda *a: statements.append(a[2]))
    clones = [item.model_copy(update={"id": other}) for other in ("b", "c", "d")]
    lines = records.proof_lines(session, runs_set, [item, *clones])
    selects = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1, statements
    assert lines == {"all-reduce": "Verified on torch 2.13.0+cpu, gloo, 1 rank, 2026-11-23"}


@pytest.mark.parametrize(
    "history",
    [
        [(Verdict.PASS, 0)],
        [(Verdict.PASS, 0), (Verdict.FAIL, 1)],
        [(Verdict.FAIL, 0), (Verdict.PASS, 1)],
        [(Verdict.PASS, 0), (Verdict.NEEDS_GPUS, 1)],
        [(Verdict.PASS, 0), (Verdict.PASS, 2), (Verdict.FAIL, 1)],
        [],
    ],
)
def test_the_question_pages_compiled_read_says_what_proof_lines_says(
    session, database_url, runs_set, history
):
    item = runs_set.challenge_set.items[0]
    digest = current_hash(runs_set)
    save(session, Verdict.PASS, "the-item-before-an-edit", DAY + timedelta(hours=5))
    for verdict, hours in history:
        save(session, verdict, digest, DAY + timedelta(hours=hours))
    expected = records.proof_lines(session, runs_set, [item]).get(item.id)
    engine = make_engine(database_url)
    try:
        with reads.Reader(engine) as reader:
            assert records.proof_line_of(reader, runs_set, item) == expected
    finally:
        engine.dispose()
    judged = sorted((hours, verdict) for verdict, hours in history if verdict in records.JUDGED)
    assert (expected is not None) == (judged != [] and judged[-1][1] is Verdict.PASS)


def test_items_with_nothing_to_run_need_no_query(session):
    loaded = load_path(TEST_CHALLENGES / "basics").sets[0]
    statements: list[str] = []
    event.listen(session.get_bind(), "before_cursor_execute", lambda *a: statements.append(a[2]))
    assert records.proof_lines(session, loaded, loaded.challenge_set.items) == {}
    assert statements == []


def test_recording_needs_an_existing_database_at_the_latest_revision(tmp_path: Path):
    missing = f"sqlite:///{tmp_path / 'missing.db'}"
    engine, why = records.recording_engine(missing)
    assert engine is None and "does not exist" in why and "ranklab db upgrade" in why
    assert not (tmp_path / "missing.db").exists()

    behind = f"sqlite:///{tmp_path / 'behind.db'}"
    migrations.upgrade(behind, "69d5b9350115")
    engine, why = records.recording_engine(behind)
    assert engine is None and "not at the latest revision" in why

    migrations.upgrade(behind)
    engine, _where = records.recording_engine(behind)
    assert engine is not None
    engine.dispose()


def test_an_unreachable_database_is_not_recorded_into(tmp_path: Path):
    engine, why = records.recording_engine(
        "postgresql+psycopg://nobody@/ranklab?host=" + str(tmp_path)
    )
    assert engine is None and "cannot be read" in why

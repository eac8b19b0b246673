"""Staff verification as background jobs: one per set or item at a time, progress as it goes.

The registry lives in the app process (`app.state.verify_jobs`). A job runs in a worker thread
that talks to the executor and writes each result in a short transaction of its own, so no
database transaction is open while snippets run (SQLite would hold its write lock meanwhile).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.challenges.loader import LoadedSet
from app.challenges.schema import ItemBase
from app.executor_client import ExecutorClient
from app.verification import batch, records
from app.verification.rules import ItemReport

log = logging.getLogger("ranklab")

JobKey = tuple[str, str | None]  # (set id, item id), or (set id, None) for the whole set
PENDING, RUNNING = "pending", "running"


@dataclass(frozen=True)
class ItemProgress:
    """Where one item of a job stands: pending, running, or its verdict with the evidence."""

    item_id: str
    state: str = PENDING
    report: ItemReport | None = None


class VerifyJob:
    """One verification in progress (or finished): its items in order and their states."""

    def __init__(self, key: JobKey, item_ids: Sequence[str]) -> None:
        self.key = key
        self.error: str | None = None
        self._lock = threading.Lock()
        self._items = {item_id: ItemProgress(item_id) for item_id in item_ids}
        self._finished = threading.Event()

    @property
    def done(self) -> bool:
        """Whether every item has been verified (or the job stopped on an error)."""
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job is done (or the timeout passes); return whether it is done."""
        return self._finished.wait(timeout)

    def progress(self) -> list[ItemProgress]:
        """A consistent copy of every item's state, in item order."""
        with self._lock:
            return list(self._items.values())

    def mark_running(self, item_id: str) -> None:
        """Say that an item's snippet is being run now."""
        with self._lock:
            self._items[item_id] = replace(self._items[item_id], state=RUNNING)

    def mark_done(self, report: ItemReport) -> None:
        """Store an item's verdict and evidence."""
        with self._lock:
            self._items[report.item_id] = ItemProgress(report.item_id, report.verdict.value, report)

    def finish(self, error: str | None = None) -> None:
        """End the job (with the error that stopped it, if any)."""
        self.error = error
        self._finished.set()


class JobRegistry:
    """The jobs of this process, at most one running per key: a second start joins it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[JobKey, VerifyJob] = {}

    def get(self, key: JobKey) -> VerifyJob | None:
        """The running or last finished job for a key."""
        with self._lock:
            return self._jobs.get(key)

    def start(
        self, key: JobKey, item_ids: Sequence[str], work: Callable[[VerifyJob], None]
    ) -> tuple[VerifyJob, bool]:
        """Start `work` in a worker thread or join this key's running job; say if it started."""
        with self._lock:
            running = self._jobs.get(key)
            if running is not None and not running.done:
                return running, False
            job = self._jobs[key] = VerifyJob(key, item_ids)
        thread = threading.Thread(
            target=_run, args=(job, work), name=f"verify-{key[0]}-{key[1]}", daemon=True
        )
        thread.start()
        return job, True


def _run(job: VerifyJob, work: Callable[[VerifyJob], None]) -> None:
    try:
        work(job)
    except Exception as error:  # a worker thread must report, not die silently
        log.exception("verification job %s failed", job.key)
        job.finish(f"{type(error).__name__}: {error}")
    else:
        job.finish()


def verify_in_background(
    registry: JobRegistry,
    client: ExecutorClient,
    loaded: LoadedSet,
    items: Sequence[ItemBase],
    repeats: int,
    engine: Engine | None,
    item_id: str | None = None,
) -> VerifyJob:
    """Start (or join) verifying these items of a set; record each verdict as it comes."""

    def work(job: VerifyJob) -> None:
        facts = batch.executor_facts(client)
        for item in items:
            job.mark_running(item.id)
            verified = batch.verify_timed(client, loaded, item, repeats, facts)
            if engine is not None:
                _record(engine, verified)
            job.mark_done(verified.report)

    key = (loaded.challenge_set.id, item_id)
    job, _started = registry.start(key, [item.id for item in items], work)
    return job


def _record(engine: Engine, verified: batch.Verified) -> None:
    try:
        records.save_verified(engine, verified)
    except SQLAlchemyError:
        log.exception("could not record the verification of %s", verified.item.id)

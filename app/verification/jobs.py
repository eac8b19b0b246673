"""Staff verification as background jobs: one per set, item, topic or lab at a time, progress
as it goes; each runs what `ranklab verify` runs (pipeline.py).

A job runs in a worker thread of the process that took the click; it talks to the executor and
writes each result in a short transaction of its own, so no database transaction is open while
snippets run (SQLite would hold its write lock meanwhile). `VerifyJobs` keeps the jobs'
progress (`app.state.verify_jobs`), chosen once in `create_app`:

- `JobRegistry` (here): in this process. The embedded executor's default: it serves one app
  process, so every poll reaches the process running the job.
- `app.verification.jobs_redis.RedisJobRegistry`: with the job bus, progress lives on Redis, so
  a poll that lands on any app process shows it, and a job whose process died shows as
  interrupted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.executor_client import ExecutorClient
from app.verification import pipeline, records
from app.verification.incremental import Selection
from app.verification.rules import ItemReport

log = logging.getLogger("ranklab")

# (set id, item id), or (set id, None) for the whole set; ("topic:ID", None), ("lab:ID", None)
JobKey = tuple[str, str | None]
PENDING, RUNNING, SKIPPED = "pending", "running", "skipped"


@dataclass(frozen=True)
class ItemProgress:
    """Where one item of a job stands: pending, running, or its verdict with the evidence."""

    item_id: str
    state: str = PENDING
    report: ItemReport | None = None


class JobProgress(Protocol):
    """Where a job's work reports each item as it goes."""

    def mark_running(self, item_id: str) -> None:
        """Say that an item's snippet is being run now."""
        ...

    def mark_skipped(self, item_id: str) -> None:
        """Say that an item is proven and unchanged, so it is not run (as `ranklab verify`)."""
        ...

    def mark_done(self, report: ItemReport) -> None:
        """Store an item's verdict and evidence."""
        ...

    @property
    def abandoned(self) -> bool:
        """Whether the job is no longer this process's (declared interrupted, or replaced by a
        newer one): its work stops before the next item, so one job per key runs at a time."""
        ...


class RunningJob(JobProgress, Protocol):
    """A job as the thread running it holds it: it reports progress, then finishes."""

    @property
    def key(self) -> JobKey:
        """The set (and item) being verified."""
        ...

    def finish(self, error: str | None = None) -> None:
        """End the job (with the error that stopped it, if any)."""
        ...


class JobView(Protocol):
    """What the staff page shows of a job: each item's state, and whether and how it ended."""

    @property
    def key(self) -> JobKey:
        """The set (and item) being verified."""
        ...

    @property
    def done(self) -> bool:
        """Whether the job has ended (every item verified, an error, or interrupted)."""
        ...

    @property
    def error(self) -> str | None:
        """Why the job stopped before its end, if it did."""
        ...

    @property
    def interrupted(self) -> bool:
        """Whether the process running the job went away before it finished."""
        ...

    def progress(self) -> list[ItemProgress]:
        """Every item's state, in item order."""
        ...


class VerifyJobs(Protocol):
    """The verification jobs: at most one running per key, a second start joins it."""

    def get(self, key: JobKey) -> JobView | None:
        """The running or last finished job for a key."""
        ...

    def start(
        self, key: JobKey, item_ids: Sequence[str], work: Callable[[JobProgress], None]
    ) -> tuple[JobView, bool]:
        """Start `work` in a worker thread or join this key's running job; say if it started."""
        ...


Job = TypeVar("Job", bound=RunningJob)


class VerifyJob:
    """One verification in progress (or finished) in this process: its items and their states."""

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

    @property
    def interrupted(self) -> bool:
        """Never: a job here ends with its process, and so does every page that shows it."""
        return False

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

    def mark_skipped(self, item_id: str) -> None:
        """Say that an item is proven and unchanged, so it is not run."""
        with self._lock:
            self._items[item_id] = replace(self._items[item_id], state=SKIPPED)

    def mark_done(self, report: ItemReport) -> None:
        """Store an item's verdict and evidence."""
        with self._lock:
            self._items[report.item_id] = ItemProgress(report.item_id, report.verdict.value, report)

    @property
    def abandoned(self) -> bool:
        """Never: in one process nothing else can declare the job interrupted or replace it."""
        return False

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
        run_in_thread(job, work)
        return job, True


def run_in_thread(job: Job, work: Callable[[Job], None]) -> None:
    """Run a job's work in a daemon thread, finishing the job however the work ends."""
    thread = threading.Thread(
        target=_run, args=(job, work), name=f"verify-{job.key[0]}-{job.key[1]}", daemon=True
    )
    thread.start()


def _run(job: Job, work: Callable[[Job], None]) -> None:
    try:
        work(job)
    except Exception as error:  # a worker thread must report, not die silently
        log.exception("verification job %s failed", job.key)
        job.finish(f"{type(error).__name__}: {error}")
    else:
        job.finish()


def verify_in_background(
    registry: VerifyJobs,
    client: ExecutorClient,
    key: JobKey,
    selection: Selection,
    skipped: Sequence[str],
    engine: Engine | None,
    repeats: int = pipeline.REPEATS,
) -> JobView:
    """Start (or join) verifying what was chosen, as `ranklab verify` does (pipeline.run); the
    items skipped as proven and unchanged are listed as such. Each item's verdict is recorded
    as it comes."""
    chosen = list(pipeline.names(selection))

    def work(job: JobProgress) -> None:
        for name in skipped:
            job.mark_skipped(name)
        upcoming = iter(chosen)
        following = next(upcoming, None)
        if following is not None:
            job.mark_running(following)
        for outcome in pipeline.run(client, selection, repeats):
            if engine is not None:
                _record(engine, outcome)
            job.mark_done(outcome.report)
            if job.abandoned:
                return
            following = next(upcoming, None)
            if following is not None:
                job.mark_running(following)

    job, _started = registry.start(key, [*skipped, *chosen], work)
    return job


def _record(engine: Engine, outcome: pipeline.Outcome) -> None:
    """Keep a verdict where the publish gate reads it: a set's item as `ranklab verify` keeps
    it, a lab's step or a proof by its proofs key (so Reload publishes what Verify proved)."""
    try:
        if outcome.verified is not None:
            records.save_verified(engine, outcome.verified)
        else:
            records.save_proof(
                engine, outcome.key, outcome.content_hash, outcome.report, outcome.duration_ms
            )
    except SQLAlchemyError:
        log.exception("could not record the verification of %s", outcome.key)

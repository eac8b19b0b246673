"""Staff verification jobs on Redis, beside the job bus: every app process shows a job's
progress, whichever process runs it.

    ranklab:verify:{set}:set:job         hash, one per job key (`…:{set}:item:{item}:job` for
                                         one item): id (this run of the job), worker (the
                                         process running it), items (JSON: the ids in order),
                                         state (running, done, interrupted), error, and per
                                         item once it has begun state:{item} and, with its
                                         verdict, report:{item} (the ItemReport as JSON); kept
                                         JOB_TTL_S after its last change
    ranklab:verify:{set}:set:alive       the running process's lease, holding the job's id:
                                         refreshed while the job runs, gone LEASE_S after that
                                         process died

The process that took the click runs the job in a worker thread, as `JobRegistry` does, and
records each verdict in the database as it comes. Starting is one script: it joins a running job
whose lease is alive, and otherwise replaces what is there, so one job per key runs at a time
across every process. Every write the job makes is a script that checks the job's id and that it
is still running, so a process whose job was declared interrupted (or replaced) writes nothing
over its successor. A reader that finds a running job with no lease marks it interrupted, once.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from pydantic import TypeAdapter, ValidationError

from app.bus_client import connect, process_name
from app.errors import Unavailable
from app.verification.jobs import (
    PENDING,
    RUNNING,
    SKIPPED,
    ItemProgress,
    JobKey,
    JobProgress,
    run_in_thread,
)
from app.verification.rules import ItemReport

log = logging.getLogger("ranklab")
JOB_TTL_S = 24 * 3600  # a finished job's progress stays on the staff page a day
LEASE_S = 10.0  # a process silent this long is gone: its job is interrupted
DONE, INTERRUPTED = "done", "interrupted"

INTERRUPTED_MESSAGE = (
    "the server running it stopped before it finished. The verdicts shown were recorded; "
    "press Verify to run it again."
)
UNREACHABLE = "Verification is unavailable right now: the run queue is unreachable."
REPORT = TypeAdapter(ItemReport)

# Start a job unless one for this key runs with a live lease (then join it: return 0).
# KEYS: job, alive; ARGV: id, worker, items (JSON), lease ms, ttl.
START = """
if redis.call('HGET', KEYS[1], 'state') == 'running' and redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'worker', ARGV[2], 'items', ARGV[3], 'state', 'running')
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[4])
return 1
"""

# Set fields of a job that is still this one and running; 0 otherwise.
# KEYS: job; ARGV: id, ttl, field, value, field, value, …
UPDATE = """
local mine = redis.call('HMGET', KEYS[1], 'id', 'state')
if mine[1] ~= ARGV[1] or mine[2] ~= 'running' then return 0 end
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""

# End a job that is still this one and running, then give up its lease.
# KEYS: job, alive; ARGV: id, ttl, error ('' for none).
FINISH = """
local mine = redis.call('HMGET', KEYS[1], 'id', 'state')
if mine[1] ~= ARGV[1] or mine[2] ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'done')
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[3]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
"""

# Renew the lease of a job that is still this one and running; 0 tells its process to stop.
# KEYS: job, alive; ARGV: id, lease ms.
REFRESH = """
local mine = redis.call('HMGET', KEYS[1], 'id', 'state')
if mine[1] ~= ARGV[1] or mine[2] ~= 'running' then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1
"""

# A job's fields; a running one whose lease is gone is marked interrupted first.
# KEYS: job, alive; ARGV: ttl, message.
READ = """
if redis.call('HGET', KEYS[1], 'state') == 'running' and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[1], 'state', 'interrupted', 'error', ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return redis.call('HGETALL', KEYS[1])
"""


def _prefix(key: JobKey) -> str:
    set_id, item_id = key
    if item_id is None:
        return f"ranklab:verify:{set_id}:set"
    return f"ranklab:verify:{set_id}:item:{item_id}"


def job_key(key: JobKey) -> str:
    """The hash holding a job's progress."""
    return f"{_prefix(key)}:job"


def alive_key(key: JobKey) -> str:
    """The lease of the process running a job."""
    return f"{_prefix(key)}:alive"


@dataclass(frozen=True)
class StoredJob:
    """A job as read from Redis (a `JobView`)."""

    key: JobKey
    items: tuple[ItemProgress, ...]
    state: str = RUNNING
    error: str | None = None

    @property
    def done(self) -> bool:
        """Whether the job has ended, interrupted or not."""
        return self.state != RUNNING

    @property
    def interrupted(self) -> bool:
        """Whether the process running it went away first."""
        return self.state == INTERRUPTED

    def progress(self) -> list[ItemProgress]:
        """Every item's state, in item order."""
        return list(self.items)


def _stored(key: JobKey, fields: dict[str, str]) -> StoredJob:
    items = []
    for item_id in json.loads(fields.get("items", "[]")):
        report = None
        if f"report:{item_id}" in fields:
            try:
                report = REPORT.validate_json(fields[f"report:{item_id}"])
            except ValidationError:  # written by another version of the app: show the state
                log.warning("verification job %s: unreadable report of %s", key, item_id)
        items.append(ItemProgress(item_id, fields.get(f"state:{item_id}", PENDING), report))
    return StoredJob(key, tuple(items), fields.get("state", DONE), fields.get("error") or None)


@dataclass
class RedisJob:
    """The running side of a job, in the process that runs it (a `RunningJob`): it writes
    each item's progress to the job's hash and keeps its lease fresh from a thread."""

    client: redis.Redis
    key: JobKey
    id: str
    lease_s: float = LEASE_S
    _finished: threading.Event = field(default_factory=threading.Event, init=False)
    _lost: threading.Event = field(default_factory=threading.Event, init=False)

    @property
    def abandoned(self) -> bool:
        """Whether the job was declared interrupted or replaced: its work stops."""
        return self._lost.is_set()

    def _update(self, *fields: str) -> None:
        try:
            if not self.client.eval(UPDATE, 1, job_key(self.key), self.id, JOB_TTL_S, *fields):
                self._lost.set()
                log.warning("verification job %s: no longer this process's to write", self.key)
        except redis.RedisError as error:  # the verdict is recorded anyway; the page lags
            log.warning("verification job %s: progress not written: %s", self.key, error)

    def mark_running(self, item_id: str) -> None:
        """Say that an item's snippet is being run now."""
        self._update(f"state:{item_id}", RUNNING)

    def mark_skipped(self, item_id: str) -> None:
        """Say that an item is proven and unchanged, so it is not run."""
        self._update(f"state:{item_id}", SKIPPED)

    def mark_done(self, report: ItemReport) -> None:
        """Store an item's verdict and evidence."""
        self._update(
            f"report:{report.item_id}",
            REPORT.dump_json(report).decode(),
            f"state:{report.item_id}",
            report.verdict.value,
        )

    def finish(self, error: str | None = None) -> None:
        """End the job (with the error that stopped it) and give up its lease."""
        self._finished.set()
        keys = (job_key(self.key), alive_key(self.key))
        try:
            self.client.eval(FINISH, 2, *keys, self.id, JOB_TTL_S, error or "")
        except redis.RedisError as failure:  # its lease runs out: readers say interrupted
            log.warning("verification job %s: end not written: %s", self.key, failure)

    def keep_lease(self) -> None:
        """Renew the lease until the job finishes or is no longer this process's."""
        keys = (job_key(self.key), alive_key(self.key))
        lease_ms = int(self.lease_s * 1000)
        while not self._finished.wait(self.lease_s / 4):
            try:
                if not self.client.eval(REFRESH, 2, *keys, self.id, lease_ms):
                    self._lost.set()  # declared interrupted, or replaced: its work stops
                    return
            except redis.RedisError as error:  # try again; readers interrupt it if it lasts
                log.warning("verification job %s: lease not refreshed: %s", self.key, error)


@dataclass
class RedisJobRegistry:
    """Verification jobs whose progress lives on Redis (a `VerifyJobs`)."""

    url: str
    worker: str = field(default_factory=process_name)
    lease_s: float = LEASE_S
    _client: redis.Redis | None = field(default=None, init=False, repr=False)

    @property
    def client(self) -> redis.Redis:
        """A pooled, thread-safe connection (made on first use)."""
        if self._client is None:
            self._client = connect(self.url)
        return self._client

    def get(self, key: JobKey) -> StoredJob | None:
        """The running or last finished job for a key, from whichever process runs it."""
        try:
            found: Any = self.client.eval(
                READ, 2, job_key(key), alive_key(key), JOB_TTL_S, INTERRUPTED_MESSAGE
            )
        except redis.RedisError as error:
            raise Unavailable(UNREACHABLE) from error
        fields = dict(zip(found[::2], found[1::2], strict=True))
        return _stored(key, fields) if fields else None

    def start(
        self, key: JobKey, item_ids: Sequence[str], work: Callable[[JobProgress], None]
    ) -> tuple[StoredJob, bool]:
        """Start `work` in a worker thread here, or join the key's job running anywhere."""
        job = RedisJob(self.client, key, secrets.token_hex(8), self.lease_s)
        try:
            started = self.client.eval(
                START, 2, job_key(key), alive_key(key),
                job.id, self.worker, json.dumps(list(item_ids)), int(self.lease_s * 1000),
                JOB_TTL_S,
            )  # fmt: skip
        except redis.RedisError as error:
            raise Unavailable(UNREACHABLE) from error
        if not started:
            running = self.get(key)
            if running is None:  # deleted under our feet: nothing sensible to join
                raise Unavailable(UNREACHABLE)
            return running, False
        threading.Thread(
            target=job.keep_lease, name=f"verify-lease-{key[0]}-{key[1]}", daemon=True
        ).start()
        run_in_thread(job, work)
        return StoredJob(key, tuple(ItemProgress(item_id) for item_id in item_ids)), True

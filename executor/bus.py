"""The job bus on Redis Streams, shared by the app (which submits) and the agents (which run).

Redis only, never torch: the web app imports this module.

    ranklab:runs:{pool}            runs waiting, one entry per run (pool: cpu | gpu); consumer
                                   group `agents` — agents pull with XREADGROUP, ack with XACK,
                                   reclaim a dead agent's entries with XAUTOCLAIM
    ranklab:dead:{pool}            runs set aside: delivered too often, or unreadable
    ranklab:run:{id}:events        one run's output, in order; each entry's stream id is its SSE
                                   event id; expires EVENTS_TTL_S after the last event
    ranklab:run:{id}:result        the RunResult, written with SET NX: the first result wins, so
                                   at-least-once delivery never shows two results for one run
    ranklab:run:{id}:cancel        set when the learner hangs up: the agent stops the run
    ranklab:agents:{pool}          hash: agent name -> JSON {slots, busy, seen, sandbox, torch,
                                   cuda_devices, gpus (names)}
    ranklab:cache:{hash}           a RunResult shared by every agent, keyed by content hash
                                   (code, launch settings, torch, executor version, sandbox)
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal, cast

import redis
import redis.asyncio as aredis

from executor.contract import ExecutorBusy, RunRequest, RunResult, RunStatus

Pool = Literal["cpu", "gpu"]
POOLS: tuple[Pool, ...] = ("cpu", "gpu")
GROUP = "agents"
EVENTS_TTL_S = 3600  # a reader may resume an hour after the last event
RESULT_TTL_S = 24 * 3600
CACHE_TTL_S = 7 * 24 * 3600
RUNS_MAXLEN = 100_000  # approximate cap on a runs stream's history (acked entries included)
# Output events one run may put on its stream (and any relay pass on): past it, the output is
# only in the result. A run printing a byte at a time made ~49k events, 4 MB of SSE.
MAX_OUTPUT_EVENTS = 1000
# A run's stream: each delivery's start, output and result, for the deliveries a run may get
# (max_deliveries 3, plus room); trimmed approximately, so at most ~100 entries more.
EVENTS_MAXLEN = 4 * (MAX_OUTPUT_EVENTS + 2)
DEAD_MAXLEN = 10_000  # runs set aside kept for an operator to look at
AGENT_STALE_S = 10.0  # an agent whose heartbeat is older than this counts as gone

# How long any client of the bus may wait for Redis. No read blocks on the server longer than
# BLOCK_MAX_S (XREAD / XREADGROUP BLOCK, BLPOP: see `block_ms`), so a reply later than
# SOCKET_TIMEOUT_S means Redis or the network is gone, and the caller hears of it then. redis-py
# 8 reads with a 5 s timeout by default, which failed every run silent for 5 s (its reader was
# in XREAD BLOCK 5000); left unset (no timeout), a frozen Redis would hang readers forever.
BLOCK_MAX_S = 5.0
SOCKET_TIMEOUT_S = 3 * BLOCK_MAX_S  # a blocked read's reply plus a slow network, with room
CONNECT_TIMEOUT_S = 2.0  # a Redis that is down refuses at once; one that is cut off, here
HEALTH_CHECK_S = 30  # a pooled connection idle this long is pinged before it is used again

DEAD_LETTER_MESSAGE = (
    "This run failed on {hosts} executor hosts in a row and was set aside; "
    "try again or ask your instructor."
)
UNREADABLE_MESSAGE = (
    "This run could not be read by the executor and was set aside; "
    "try again or ask your instructor."
)
STOPPED_MESSAGE = "The run was stopped: its reader hung up."

EventKind = Literal["start", "output", "result"]


def connect(url: str) -> redis.Redis:
    """A pooled, thread-safe connection to the bus's Redis, replies decoded, with the bus's
    timeouts (what a URL's own `?socket_timeout=` says wins)."""
    return redis.Redis.from_url(url, decode_responses=True, **_TIMEOUTS)


def aconnect(url: str) -> aredis.Redis:
    """The same for asyncio (one per event loop: a connection belongs to the loop that made
    it)."""
    return aredis.Redis.from_url(url, decode_responses=True, **_TIMEOUTS)


def aconnect_single(url: str) -> aredis.Redis:
    """`aconnect` on one connection of its own (a pool of one, private to the client)."""
    return aredis.Redis.from_url(
        url, single_connection_client=True, decode_responses=True, **_TIMEOUTS
    )


_TIMEOUTS: dict[str, Any] = {
    "socket_timeout": SOCKET_TIMEOUT_S,
    "socket_connect_timeout": CONNECT_TIMEOUT_S,
    "health_check_interval": HEALTH_CHECK_S,
}


def block_s(wanted: float) -> float:
    """How long one blocking read may wait on the server: `wanted`, at most BLOCK_MAX_S."""
    return min(wanted, BLOCK_MAX_S)


def block_ms(wanted: float) -> int:
    """`block_s` in milliseconds for XREAD / XREADGROUP BLOCK (at least 1: 0 means forever)."""
    return max(1, int(block_s(wanted) * 1000))


def runs_key(pool: Pool) -> str:
    """The stream a pool's agents pull runs from."""
    return f"ranklab:runs:{pool}"


def dead_key(pool: Pool) -> str:
    """The dead-letter stream of a pool."""
    return f"ranklab:dead:{pool}"


def events_key(run_id: str) -> str:
    """The output stream of one run."""
    return f"ranklab:run:{run_id}:events"


def result_key(run_id: str) -> str:
    """Where one run's RunResult is kept (first write wins)."""
    return f"ranklab:run:{run_id}:result"


def queued_key(run_id: str) -> str:
    """Set when the run is submitted: a reader may follow it before any agent has taken it."""
    return f"ranklab:run:{run_id}:queued"


def run_keys(run_id: str) -> tuple[str, str, str]:
    """The keys whose existence says a run is known: queued, with output, or finished."""
    return queued_key(run_id), events_key(run_id), result_key(run_id)


def cancel_key(run_id: str) -> str:
    """Set when whoever waits for the run has gone away."""
    return f"ranklab:run:{run_id}:cancel"


def cache_key_name(content_hash: str) -> str:
    """Where agents share a result by content hash (executor.cache.cache_key)."""
    return f"ranklab:cache:{content_hash}"


def agents_key(pool: Pool) -> str:
    """The heartbeat hash of a pool's agents."""
    return f"ranklab:agents:{pool}"


def pool_for(request: RunRequest) -> Pool:
    """NCCL runs and runs that declare GPUs need GPU hosts; everything else (gloo, auto) goes to
    the CPU pool, where auto means gloo."""
    return "gpu" if request.backend == "nccl" or request.gpus > 0 else "cpu"


def new_run_id() -> str:
    """An unguessable run id: it also names the run's output to whoever holds it."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class BusEvent:
    """One entry of a run's output stream."""

    id: str  # the stream id: the SSE event id
    attempt: int  # which delivery of the run produced it (1 for the first)
    kind: EventKind
    data: dict[str, Any]
    agent: str


def encode_event(attempt: int, kind: EventKind, data: dict[str, Any], agent: str) -> dict[str, str]:
    """The fields of an output stream entry."""
    return {"attempt": str(attempt), "kind": kind, "data": json.dumps(data), "agent": agent}


def decode_event(entry_id: str, fields: dict[str, str]) -> BusEvent:
    """Read an output stream entry (written by `encode_event`)."""
    kind = fields["kind"]
    if kind not in ("start", "output", "result"):
        raise ValueError(f"unknown event kind {kind!r}")
    known: EventKind = kind  # type: ignore[assignment]
    return BusEvent(entry_id, int(fields["attempt"]), known, json.loads(fields["data"]),
                    fields.get("agent", ""))  # fmt: skip


@dataclass(frozen=True)
class QueueStats:
    """How a pool is doing: waiting runs, runs being run, and the agents serving it."""

    depth: int  # entries no agent has taken yet
    pending: int  # entries taken and not acked (running, or held by a dead agent)
    oldest_wait_s: float  # age of the oldest entry nobody has taken (0 when none)
    agents: int  # agents with a fresh heartbeat
    slots: int
    busy: int


def live_agents(heartbeats: dict[str, str], now: float) -> dict[str, dict[str, Any]]:
    """The agents whose heartbeat is fresh, from a pool's heartbeat hash."""
    found: dict[str, dict[str, Any]] = {}
    for name, raw in heartbeats.items():
        try:
            beat = json.loads(raw)
        except ValueError:
            continue
        if isinstance(beat, dict) and now - float(beat.get("seen", 0)) < AGENT_STALE_S:
            found[name] = beat
    return found


def _id_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


def _group_info(client: redis.Redis, pool: Pool) -> dict[str, Any] | None:
    try:
        groups = client.xinfo_groups(runs_key(pool))
    except redis.ResponseError:  # no stream yet
        return None
    return next((group for group in groups if group["name"] == GROUP), None)


def queue_stats(client: redis.Redis, pool: Pool, now: float | None = None) -> QueueStats:
    """Measure a pool: waiting depth, pending entries, the oldest wait, agents and their slots.

    `client` must decode responses (decode_responses=True), as every client of the bus does."""
    now = time.time() if now is None else now
    agents = live_agents(cast(dict[str, str], client.hgetall(agents_key(pool))), now)
    slots = sum(int(beat.get("slots", 0)) for beat in agents.values())
    busy = sum(int(beat.get("busy", 0)) for beat in agents.values())
    group = _group_info(client, pool)
    if group is None:
        return QueueStats(0, 0, 0.0, len(agents), slots, busy)
    last = group["last-delivered-id"]
    waiting: list[Any] = cast(list[Any], client.xrange(runs_key(pool), min=f"({last}", count=1))
    depth = group.get("lag")
    if depth is None:  # Redis cannot tell (entries deleted): count what is after the last read
        depth = len(cast(list[Any], client.xrange(runs_key(pool), min=f"({last}")))
    oldest = max(0.0, now - _id_ms(waiting[0][0]) / 1000) if waiting else 0.0
    return QueueStats(int(depth), int(group["pending"]), oldest, len(agents), slots, busy)


def ensure_group(client: redis.Redis, pool: Pool) -> None:
    """Create the pool's stream and consumer group if they do not exist yet."""
    try:
        client.xgroup_create(runs_key(pool), GROUP, id="0", mkstream=True)
    except redis.ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


async def aensure_group(client: aredis.Redis, pool: Pool) -> None:
    """The same, for the event loop."""
    try:
        await client.xgroup_create(runs_key(pool), GROUP, id="0", mkstream=True)
    except redis.ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


def busy_error(pool: Pool, depth: int) -> ExecutorBusy:
    """The error a full queue raises: where the run would have stood, and how many wait."""
    return ExecutorBusy(
        f"the executor is busy: {depth} runs are waiting for a {pool} host; "
        f"this one would be number {depth + 1}. Try again shortly.",
        position=depth + 1,
        depth=depth,
    )


def _entry(run_id: str, request: RunRequest, request_id: str | None) -> dict[str, str]:
    # Fields left at their defaults are left out: an agent of an older release (whose contract
    # forbids fields it does not know) still reads every run that uses nothing new.
    order = request.model_dump_json(exclude_defaults=True)
    fields = {"run_id": run_id, "request": order, "submitted": str(time.time())}
    if request_id:  # the web request that asked for the run, for the agent's log lines
        fields["request_id"] = request_id
    return fields


def submit(
    client: redis.Redis,
    request: RunRequest,
    limit: int,
    run_id: str | None = None,
    request_id: str | None = None,
) -> str:
    """Put a run on its pool's stream and return its id; ExecutorBusy when `limit` runs wait.

    The check and the XADD are two commands, so with several app processes the limit is soft by
    at most the number of runs submitted at the same instant: it bounds waiting, it is not a
    quota."""
    pool = pool_for(request)
    group = _group_info(client, pool)
    if group is None:
        ensure_group(client, pool)
        group = {"lag": 0}
    depth = group.get("lag")
    if depth is None:  # Redis cannot tell (entries deleted): count, up to what matters
        after = f"({group['last-delivered-id']}"
        depth = len(cast(list[Any], client.xrange(runs_key(pool), min=after, count=limit + 1)))
    if depth >= limit:
        raise busy_error(pool, depth)
    run_id = run_id or new_run_id()
    client.set(queued_key(run_id), "1", ex=EVENTS_TTL_S)
    client.xadd(
        runs_key(pool),
        _entry(run_id, request, request_id),  # type: ignore[arg-type]
        maxlen=RUNS_MAXLEN,
        approximate=True,
    )
    return run_id


async def asubmit(
    client: aredis.Redis,
    request: RunRequest,
    limit: int,
    run_id: str | None = None,
    request_id: str | None = None,
) -> str:
    """`submit`, for the event loop."""
    pool = pool_for(request)
    try:
        groups = await client.xinfo_groups(runs_key(pool))
    except redis.ResponseError:  # no stream yet
        groups = []
    group = next((found for found in groups if found["name"] == GROUP), None)
    if group is None:
        await aensure_group(client, pool)
        group = {"lag": 0}
    depth = group.get("lag")
    if depth is None:  # Redis cannot tell (entries deleted): count, up to what matters
        after = f"({group['last-delivered-id']}"
        waiting: Any = await client.xrange(runs_key(pool), min=after, count=limit + 1)
        depth = len(waiting)
    if depth >= limit:
        raise busy_error(pool, depth)
    run_id = run_id or new_run_id()
    await client.set(queued_key(run_id), "1", ex=EVENTS_TTL_S)
    await client.xadd(
        runs_key(pool),
        _entry(run_id, request, request_id),  # type: ignore[arg-type]
        maxlen=RUNS_MAXLEN,
        approximate=True,
    )
    return run_id


def set_aside_result(hosts: int | None) -> RunResult:
    """The learner-facing result of a run sent to the dead-letter stream."""
    message = UNREADABLE_MESSAGE if hosts is None else DEAD_LETTER_MESSAGE.format(hosts=hosts)
    return RunResult(status=RunStatus.INTERNAL_ERROR, duration_ms=0, message=message)


class Follower:
    """Turns a run's output stream into what a reader shows: never an older attempt's events
    after a newer attempt has begun (an agent that lost its claim may still be writing)."""

    def __init__(self) -> None:
        self.attempt = 0
        self.last_id = "0-0"

    def take(self, event: BusEvent) -> Literal["show", "restart", "skip", "result"]:
        """Classify the next event: show it, a new attempt began (clear what was shown), skip
        it (a marker, or a stale attempt's), or the run's end (read the result key)."""
        self.last_id = event.id
        if event.kind == "result":
            return "result"
        if event.attempt < self.attempt:
            return "skip"
        restarted = self.attempt != 0 and event.attempt > self.attempt
        self.attempt = event.attempt
        if event.kind == "start":
            return "restart" if restarted else "skip"
        return "show"

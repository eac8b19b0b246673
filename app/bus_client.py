"""The executor seam over Redis: submit a run to a pool's stream, follow its output stream.

Used instead of `HttpExecutorClient` when RANKLAB_QUEUE_URL is set; `ranklab agent` processes
on CPU and GPU hosts run what is submitted (see executor/bus.py for the keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import redis
import redis.asyncio as aredis
from prometheus_client.core import GaugeMetricFamily, Metric

from app import obs
from app.executor_client import RunEvent
from app.fanout import READERS, READERS_PER_STREAM, StreamHub
from executor import bus
from executor.contract import ExecutorUnavailable, OutputEvent, RunRequest, RunResult

CANCEL_TTL_S = 3600

# Whoever wants each run's bus id before the run is queued: a lab run's driver keeps it with
# the run (app.labs.live_redis), so that whoever finds the driver dead can cancel the run on its
# agent. The ExecutorClient protocol, shared with the HTTP and embedded clients, has no room for
# it, so the wish travels with the task that drives the run.
BeforeSubmit = Callable[[str], Awaitable[None]]
_before_submit: ContextVar[BeforeSubmit | None] = ContextVar("before_submit", default=None)


@contextlib.contextmanager
def before_submit(announce: BeforeSubmit) -> Iterator[None]:
    """Within this block (and the tasks it starts), `astream` awaits `announce(run_id)` with
    each run's bus id before it queues the run."""
    token = _before_submit.set(announce)
    try:
        yield
    finally:
        _before_submit.reset(token)


# The bus's connections, with timeouts that outlast its longest blocking read (executor.bus).
connect = bus.connect
aconnect = bus.aconnect


def process_name() -> str:
    """This app process's name on the bus (host, pid and a random suffix): who holds a lease."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass
class RedisExecutorClient:
    """Runs snippets through the job bus; the ExecutorClient protocol, plus `events` for
    resumable SSE (each event's id is its Redis stream id)."""

    url: str
    timeout_s: float = 60.0  # beyond the run's own limit: queueing, reclaiming, forking
    queue_limit: int = 100  # runs waiting in a pool before submit answers busy
    readers_per_run: int = READERS_PER_STREAM  # SSE readers of one run in this process
    readers: int = READERS  # SSE readers of bus runs in this process, all runs together
    _client: redis.Redis | None = field(default=None, init=False, repr=False)
    _hub: StreamHub | None = field(default=None, init=False, repr=False)
    _hub_loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)

    @property
    def client(self) -> redis.Redis:
        """A pooled, thread-safe connection for the blocking methods (made on first use)."""
        if self._client is None:
            self._client = connect(self.url)
        return self._client

    def _async_client(self) -> aredis.Redis:
        # One per call: an asyncio connection belongs to the event loop that made it.
        return aconnect(self.url)

    def health(self, pool: bus.Pool = "cpu") -> dict[str, Any] | None:
        """The pool's state when one of its agents at least is warm and beating, else None.

        `sandbox` is "on" only when every warm agent sandboxes: labs refuse otherwise.
        `cuda_devices` is the most GPUs one live GPU agent holds (a run's ranks share one host),
        whichever pool is asked about: verify reports "needs N GPUs" only beyond it."""
        try:
            stats = bus.queue_stats(self.client, pool)
            beats = cast(dict[str, str], self.client.hgetall(bus.agents_key(pool)))
            live = bus.live_agents(beats, time.time())
            cuda_devices = self._most_gpus(live if pool == "gpu" else None)
        except redis.RedisError:
            return None
        agents = {name: beat for name, beat in live.items() if beat.get("ready")}
        if not agents:  # none, or every one restarting its warm pool
            return None
        modes = {str(beat.get("sandbox", "")) for beat in agents.values()}
        sandbox = "on" if modes == {"on"} else sorted(modes - {"on"})[0]
        torch = next((beat.get("torch") for beat in agents.values() if beat.get("torch")), None)
        return {
            "status": "ok",
            "torch": torch,
            "sandbox": sandbox,
            "pool": pool,
            "agents": stats.agents,
            "slots": stats.slots,
            "busy": stats.busy,
            "depth": stats.depth,
            "pending": stats.pending,
            "oldest_wait_s": stats.oldest_wait_s,
            "cuda_devices": cuda_devices,
        }

    def _most_gpus(self, gpu_agents: dict[str, dict[str, Any]] | None) -> int:
        """The most GPUs any ready agent of the GPU pool holds (0 when it has none)."""
        if gpu_agents is None:
            beats = cast(dict[str, str], self.client.hgetall(bus.agents_key("gpu")))
            gpu_agents = bus.live_agents(beats, time.time())
        counts = [int(b.get("cuda_devices") or 0) for b in gpu_agents.values() if b.get("ready")]
        return max(counts, default=0)

    def submit(self, request: RunRequest) -> str:
        """Queue a run and return its id; ExecutorBusy when its pool's queue is full."""
        try:
            return bus.submit(
                self.client, request, self.queue_limit, request_id=obs.current_request_id()
            )
        except redis.RedisError as error:
            raise ExecutorUnavailable(f"the run queue is unreachable: {error}") from error

    def run(self, request: RunRequest) -> RunResult:
        """Run a snippet and return its RunResult."""
        for event in self.stream(request):
            if isinstance(event, RunResult):
                return event
        raise ExecutorUnavailable("the run ended without a result")  # stream never does this

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        """Run a snippet, yielding its output as it arrives, then the result."""
        run_id = self.submit(request)
        yield from self.follow(run_id, self.timeout_s + request.timeout_s)

    def follow(self, run_id: str, timeout_s: float) -> Iterator[RunEvent]:
        """Follow a submitted run: its output as it arrives (the newest attempt's only), then
        the result key's value. Leaving early tells the agent to stop the run."""
        deadline = time.monotonic() + timeout_s
        follower = bus.Follower()
        done = False
        cut_off = False  # Redis stopped answering: a cancel would wait as long, and fail too
        try:
            while not done:
                block_ms = _block_ms(deadline)
                try:
                    found = self.client.xread(
                        {bus.events_key(run_id): follower.last_id}, block=block_ms
                    )
                except redis.RedisError as error:
                    cut_off = isinstance(error, redis.TimeoutError | redis.ConnectionError)
                    raise ExecutorUnavailable(f"the run queue is unreachable: {error}") from error
                for event in _decode(found):
                    shown = _shown(follower, event)
                    if isinstance(shown, OutputEvent):
                        yield shown
                    elif shown == "result":
                        done = True
                        yield self._result(run_id)
                        break
        finally:
            if not done and not cut_off:
                self._cancel(run_id)

    def _result(self, run_id: str) -> RunResult:
        raw = self.client.get(bus.result_key(run_id))
        if raw is None:
            raise ExecutorUnavailable("the run's result has expired")
        return RunResult.model_validate_json(raw)

    def _cancel(self, run_id: str) -> None:
        with contextlib.suppress(redis.RedisError):  # else the run finishes unobserved
            self.client.set(bus.cancel_key(run_id), "1", ex=CANCEL_TTL_S)

    async def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        """The same on the event loop; closing the iterator early stops the run."""
        client = self._async_client()
        run_id: str | None = None
        done = False
        cut_off = False  # Redis stopped answering: a cancel would wait as long, and fail too
        try:
            chosen = bus.new_run_id()
            announce = _before_submit.get()
            if announce is not None:
                await announce(chosen)
            try:
                run_id = await bus.asubmit(
                    client,
                    request,
                    self.queue_limit,
                    run_id=chosen,
                    request_id=obs.current_request_id(),
                )
            except redis.RedisError as error:
                raise ExecutorUnavailable(f"the run queue is unreachable: {error}") from error
            deadline = time.monotonic() + self.timeout_s + request.timeout_s
            following = self._follow(client, run_id, "0-0", deadline)
            async with contextlib.aclosing(following):
                async for event in following:
                    if isinstance(event, bus.BusEvent):
                        continue  # a restart marker: RunEvent has no way to say it
                    if isinstance(event, RunResult):
                        done = True
                    yield event
        except ExecutorUnavailable as error:
            cut_off = isinstance(error.__cause__, redis.TimeoutError | redis.ConnectionError)
            raise
        finally:
            # Shielded: a cancelled reader (Stop, a closed tab) must still tell the agent.
            with anyio.CancelScope(shield=True):
                if run_id is not None and not done and not cut_off:
                    with contextlib.suppress(redis.RedisError):
                        await client.set(bus.cancel_key(run_id), "1", ex=CANCEL_TTL_S)
                await client.aclose()

    async def known(self, run_id: str) -> bool:
        """Whether the run is queued, or has output or a result still kept (an hour after its
        last event)."""
        try:
            found = await self.hub.call(lambda client: client.exists(*bus.run_keys(run_id)))
        except redis.RedisError as error:
            raise ExecutorUnavailable(f"the run queue is unreachable: {error}") from error
        return bool(found)

    @property
    def hub(self) -> StreamHub:
        """The runs' output streams this process follows, one XREAD loop per run for all its
        SSE readers (one hub per event loop: a connection belongs to the loop that made it)."""
        loop = asyncio.get_running_loop()
        if self._hub is None or self._hub_loop is not loop:
            self._hub = StreamHub(self.url, _is_result, self.readers_per_run, self.readers)
            self._hub_loop = loop
        return self._hub

    def admit(self, run_id: str) -> None:
        """Raise TooManyReaders when one more reader of the run would pass a cap."""
        self.hub.admit(bus.events_key(run_id))

    async def aclose(self) -> None:
        """Stop the SSE readers' reads of this loop's hub (the app is shutting down)."""
        if self._hub is not None and self._hub_loop is asyncio.get_running_loop():
            await self._hub.aclose()

    async def events(
        self, run_id: str, after: str | None = None
    ) -> AsyncGenerator[tuple[str, str, dict[str, Any]], None]:
        """A run's events as (stream id, name, payload) from just after `after` (a Last-Event-ID),
        to the result: `output` per chunk, `restart` when a newer attempt begins (clear what was
        shown), `result` last. Raises ExecutorUnavailable for an unknown or expired run, and
        TooManyReaders past the readers' caps (see `admit`)."""
        hub = self.hub
        key = bus.events_key(run_id)
        try:
            known = await hub.call(lambda client: client.exists(*bus.run_keys(run_id)))
            earlier: Any = []
            if after:  # the attempt the reader was following, so a stale one stays hidden
                earlier = await hub.call(lambda client: client.xrevrange(key, max=after, count=1))
        except redis.RedisError as error:
            raise ExecutorUnavailable(f"the run queue is unreachable: {error}") from error
        if not known:
            raise ExecutorUnavailable("no such run, or its output has expired")
        deadline = time.monotonic() + self.timeout_s + bus.EVENTS_TTL_S
        follower = bus.Follower()
        if after:
            for event in _decode([(None, earlier)]):
                if follower.take(event) == "result":
                    return  # the reader has seen the end already
        entries = hub.follow(key, after or "0-0", deadline)
        shown = 0  # output events passed on: an agent of an older release does not cap them
        try:
            async with contextlib.aclosing(entries):
                async for entry_id, fields in entries:
                    event = bus.decode_event(entry_id, fields)
                    verdict = _shown(follower, event)
                    if verdict == "restart":
                        shown = 0
                        yield event.id, "restart", {"attempt": event.attempt}
                    elif isinstance(verdict, OutputEvent):
                        shown += 1
                        if shown <= bus.MAX_OUTPUT_EVENTS:
                            yield event.id, "output", verdict.model_dump(mode="json")
                    elif verdict == "result":
                        raw = await hub.call(lambda client: client.get(bus.result_key(run_id)))
                        if raw is None:
                            raise ExecutorUnavailable("the run's result has expired")
                        result = RunResult.model_validate_json(raw)
                        yield event.id, "result", result.model_dump(mode="json")
                        return
        except redis.RedisError as error:
            raise ExecutorUnavailable(f"the run queue is unreachable: {error}") from error
        except TimeoutError as error:
            raise ExecutorUnavailable("no executor host finished the run in time") from error

    async def _follow(
        self,
        client: aredis.Redis,
        run_id: str,
        start: str,
        deadline: float,
        follower: bus.Follower | None = None,
    ) -> AsyncGenerator[RunEvent | bus.BusEvent, None]:
        """Read the output stream from `start`: output events, restart markers, the result."""
        follower = follower or bus.Follower()
        follower.last_id = start
        shown = 0  # output events passed on: an agent of an older release does not cap them
        while True:
            try:
                found = await client.xread(
                    {bus.events_key(run_id): follower.last_id}, block=_block_ms(deadline)
                )
            except redis.RedisError as error:
                raise ExecutorUnavailable(f"the run queue is unreachable: {error}") from error
            for event in _decode(found):
                verdict = _shown(follower, event)
                if verdict == "restart":
                    shown = 0
                    yield event
                elif isinstance(verdict, OutputEvent):
                    shown += 1
                    if shown <= bus.MAX_OUTPUT_EVENTS:
                        yield verdict
                elif verdict == "result":
                    raw = await client.get(bus.result_key(run_id))
                    if raw is None:
                        raise ExecutorUnavailable("the run's result has expired")
                    yield RunResult.model_validate_json(raw)
                    return


def _is_result(fields: dict[str, str]) -> bool:
    return fields.get("kind") == "result"  # a run's stream ends with its result


def _block_ms(deadline: float) -> int:
    left = deadline - time.monotonic()
    if left <= 0:
        raise ExecutorUnavailable("no executor host finished the run in time")
    return bus.block_ms(left)


def _decode(found: Any) -> Iterator[bus.BusEvent]:
    for _stream, entries in found or []:
        for entry_id, fields in entries:
            yield bus.decode_event(entry_id, fields)


def _shown(follower: bus.Follower, event: bus.BusEvent) -> OutputEvent | str:
    verdict = follower.take(event)
    if verdict == "show" and event.kind == "output":
        return OutputEvent.model_validate(event.data)
    return verdict


@dataclass(eq=False)  # registered by identity (app.metrics.register_collector)
class QueueCollector:
    """The job bus at /metrics, read from Redis at each scrape: per pool, the runs waiting and
    the oldest one's wait, the runs taken and not acked, and the agents with their slots."""

    client: RedisExecutorClient
    pools: tuple[bus.Pool, ...] = ("cpu", "gpu")

    def collect(self) -> Iterator[Metric]:
        """One gauge family per figure, labelled by pool; nothing when Redis cannot answer."""
        families = {
            "depth": GaugeMetricFamily(
                "ranklab_queue_depth", "Runs waiting for an agent.", labels=["pool"]
            ),
            "oldest_wait_s": GaugeMetricFamily(
                "ranklab_queue_oldest_wait_seconds",
                "How long the oldest waiting run has waited.",
                labels=["pool"],
            ),
            "pending": GaugeMetricFamily(
                "ranklab_queue_pending", "Runs taken by an agent and not finished.", labels=["pool"]
            ),
            "agents": GaugeMetricFamily(
                "ranklab_agents", "Agents with a fresh heartbeat.", labels=["pool"]
            ),
            "slots": GaugeMetricFamily(
                "ranklab_agent_slots", "Run slots of the live agents.", labels=["pool"]
            ),
            "busy": GaugeMetricFamily(
                "ranklab_agent_slots_busy", "Slots running a snippet now.", labels=["pool"]
            ),
        }
        try:
            measured = {pool: bus.queue_stats(self.client.client, pool) for pool in self.pools}
        except redis.RedisError:
            return
        for pool, stats in measured.items():
            for name, family in families.items():
                family.add_metric([pool], float(getattr(stats, name)))
        yield from families.values()

"""`ranklab agent`: pull runs from Redis when a slot is free, run them, stream their output back.

At-least-once: an entry is acked only once its result is written, so a run whose agent dies is
reclaimed (XAUTOCLAIM) by another agent after `reclaim_after_s`. While a run lasts its agent
keeps the claim fresh (XCLAIM … JUSTID resets the idle time), so a live long run is never
taken. Results are shared between agents by content hash (as each executor caches its own).
The result is written with SET NX: a run delivered twice still has one result. An entry
delivered more than `max_deliveries` times, or one that does not parse, goes to the dead-letter
stream and its run gets a result that tells the learner it was set aside.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis
import redis.asyncio as aredis

from executor import bus
from executor.cache import cache_key, cacheable
from executor.contract import (
    ExecutorUnavailable,
    OutputEvent,
    RunRequest,
    RunResult,
    RunStatus,
)
from executor.limits import LimitViolation

log = logging.getLogger("ranklab.agent")
CANCEL_POLL_S = 0.5


class Runner(Protocol):
    """What the agent needs of an executor (`executor.runner.Executor`; tests pass a fake)."""

    @property
    def ready(self) -> bool: ...

    @property
    def info(self) -> dict[str, Any]: ...

    async def open(self, request: RunRequest) -> AsyncIterator[OutputEvent | RunResult]: ...


@dataclass
class AgentSettings:
    """How an agent serves its pool."""

    pool: bus.Pool = "cpu"
    slots: int = 1
    name: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    reclaim_after_s: float = 30.0  # an entry idle this long belongs to a dead agent
    max_deliveries: int = 3
    heartbeat_s: float = 2.0
    block_s: float = 1.0  # longest wait for a new run before looking for abandoned ones


class Agent:
    """One agent process: a pull loop, a task per run in progress, a heartbeat."""

    def __init__(self, client: aredis.Redis, runner: Runner, settings: AgentSettings) -> None:
        self.client = client
        self.runner = runner
        self.settings = settings
        self.running: set[asyncio.Task[None]] = set()
        self.stream = bus.runs_key(settings.pool)

    async def serve(self, stopping: asyncio.Event) -> None:
        """Pull and run until `stopping` is set, then finish the runs in progress."""
        await bus.aensure_group(self.client, self.settings.pool)
        heartbeat = asyncio.create_task(self._heartbeat(stopping))
        stop_waiter = asyncio.create_task(stopping.wait())
        try:
            while not stopping.is_set():
                if len(self.running) >= self.settings.slots or not self.runner.ready:
                    await asyncio.wait(
                        {*self.running, stop_waiter},
                        timeout=self.settings.block_s,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    continue
                try:
                    entry = await self._next()
                except redis.ResponseError as error:
                    if "NOGROUP" not in str(error):
                        raise
                    # Redis lost the stream (restarted without persistence, or flushed).
                    await bus.aensure_group(self.client, self.settings.pool)
                    continue
                except (redis.ConnectionError, redis.TimeoutError) as error:
                    log.warning("Redis unreachable (%s); trying again", error)
                    await asyncio.wait({stop_waiter}, timeout=self.settings.block_s)
                    continue
                if entry is not None:
                    task = asyncio.create_task(self._handle(*entry))
                    self.running.add(task)
                    task.add_done_callback(self.running.discard)
            if self.running:  # graceful: the runs in progress finish and are acked
                await asyncio.gather(*self.running, return_exceptions=True)
        finally:
            stop_waiter.cancel()
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            await self._leave()

    async def _leave(self) -> None:
        """Withdraw the heartbeat, and the consumer itself when it holds nothing (else the
        group would list every agent that ever ran; one holding entries stays for reclaim)."""
        name = self.settings.name
        with contextlib.suppress(redis.RedisError):
            await self.client.hdel(bus.agents_key(self.settings.pool), name)
            held = await self.client.xpending_range(
                self.stream, bus.GROUP, min="-", max="+", count=1, consumername=name
            )
            if not held:
                await self.client.xgroup_delconsumer(self.stream, bus.GROUP, name)

    async def _next(self) -> tuple[str, dict[str, str]] | None:
        """An abandoned entry if there is one, else a new one (waiting up to block_s)."""
        name = self.settings.name
        claimed = await self.client.xautoclaim(
            self.stream,
            bus.GROUP,
            name,
            min_idle_time=int(self.settings.reclaim_after_s * 1000),
            start_id="0-0",
            count=1,
        )
        for entry_id, fields in claimed[1]:
            if fields:
                log.info("reclaimed %s from a silent agent", entry_id)
                return entry_id, fields
        found: Any = await self.client.xreadgroup(
            bus.GROUP, name, {self.stream: ">"}, count=1, block=bus.block_ms(self.settings.block_s)
        )
        for _stream, entries in found or []:
            for entry_id, fields in entries:
                return str(entry_id), dict(fields)
        return None

    async def _deliveries(self, entry_id: str) -> int:
        pending = await self.client.xpending_range(
            self.stream, bus.GROUP, min=entry_id, max=entry_id, count=1
        )
        return int(pending[0]["times_delivered"]) if pending else 1

    async def _handle(self, entry_id: str, fields: dict[str, str]) -> None:
        try:
            await self._handle_entry(entry_id, fields)
        except Exception:
            # Unacked: it is reclaimed once idle long enough, and set aside after
            # max_deliveries, so a run that breaks agents cannot break them forever.
            log.exception("run %s failed in the agent; it will be reclaimed", entry_id)

    async def _handle_entry(self, entry_id: str, fields: dict[str, str]) -> None:
        deliveries = await self._deliveries(entry_id)
        run_id = fields.get("run_id") or ""
        try:
            request = RunRequest.model_validate_json(fields.get("request", ""))
        except ValueError:
            await self._set_aside(entry_id, fields, run_id, deliveries, hosts=None)
            return
        if await self.client.exists(bus.result_key(run_id)):
            await self.client.xack(self.stream, bus.GROUP, entry_id)  # finished before: done
            return
        if deliveries > self.settings.max_deliveries:
            await self._set_aside(entry_id, fields, run_id, deliveries, deliveries - 1)
            return
        if await self.client.exists(bus.cancel_key(run_id)):
            await self._finish(entry_id, run_id, deliveries, _stopped())
            return
        log.info(
            "run %s (attempt %d) for request %s",
            run_id,
            deliveries,
            fields.get("request_id", "-"),
        )
        await self._emit(run_id, deliveries, "start", {})
        work = asyncio.create_task(self._execute(run_id, deliveries, request))
        keeper = asyncio.create_task(self._keep_claim(entry_id, run_id, work))
        try:
            result = await work
        except asyncio.CancelledError:
            if keeper.done() and not keeper.cancelled() and keeper.result() == "lost":
                return  # its new owner finishes it; a result from here must not win
            result = _stopped()
        except ExecutorUnavailable:
            return  # not acked: retried here or elsewhere once it has been idle long enough
        finally:
            keeper.cancel()
        await self._finish(entry_id, run_id, deliveries, result)

    async def _execute(self, run_id: str, attempt: int, request: RunRequest) -> RunResult:
        info = self.runner.info
        shared = bus.cache_key_name(
            cache_key(request, str(info.get("torch", "")), not info.get("trusted"))
        )
        known: Any = await self.client.get(shared) if request.use_cache else None
        if known is not None and cacheable(RunResult.model_validate_json(known)):
            # (else an older agent shared a result that load may have made: run it afresh)
            return await self._replay(run_id, attempt, known)
        try:
            events = await self.runner.open(request)
        except LimitViolation as error:
            return RunResult(status=RunStatus.REJECTED, duration_ms=0, message=error.message)
        result: RunResult | None = None
        emitted = 0
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if isinstance(event, OutputEvent):
                    emitted += 1
                    if emitted > bus.MAX_OUTPUT_EVENTS:
                        continue  # drained all the same; the result holds the rest
                    await self._emit(run_id, attempt, "output", event.model_dump(mode="json"))
                else:
                    result = event
        if result is None:
            raise ExecutorUnavailable("the executor ended a run without a result")
        if request.store_result and cacheable(result):
            await self.client.set(shared, result.model_dump_json(), ex=bus.CACHE_TTL_S)
        return result

    async def _replay(self, run_id: str, attempt: int, known: str) -> RunResult:
        """Serve a result another agent observed: its output as events, then the result."""
        result = RunResult.model_validate_json(known).model_copy(update={"cached": True})
        for rank in result.ranks:
            for stream, text in (("stdout", rank.stdout), ("stderr", rank.stderr)):
                if text:
                    event = {"rank": rank.rank, "stream": stream, "text": text}
                    await self._emit(run_id, attempt, "output", event)
        return result

    async def _keep_claim(self, entry_id: str, run_id: str, work: asyncio.Task[Any]) -> str:
        """Reset the entry's idle time while the run lasts; stop the run if its reader left
        ("cancelled") or if another agent took the entry over while this one stalled ("lost")."""
        refresh_s = max(0.05, self.settings.reclaim_after_s / 3)
        tick_s = min(CANCEL_POLL_S, refresh_s)  # a learner's Stop takes effect within this
        refreshed = time.monotonic()
        while True:
            await asyncio.sleep(tick_s)
            try:
                if await self.client.exists(bus.cancel_key(run_id)):
                    work.cancel()
                    return "cancelled"
                if time.monotonic() - refreshed < refresh_s:
                    continue
                owner = await self.client.xpending_range(
                    self.stream, bus.GROUP, min=entry_id, max=entry_id, count=1
                )
                if not owner or owner[0]["consumer"] != self.settings.name:
                    work.cancel()
                    return "lost"
                # JUSTID: resets the idle time without counting a delivery. Between the check
                # above and this, another agent could take the entry and lose it back here:
                # both then run it, and SET NX still keeps one result.
                await self.client.xclaim(
                    self.stream, bus.GROUP, self.settings.name, 0, [entry_id], justid=True
                )
                refreshed = time.monotonic()
            except redis.RedisError as error:  # keep running; try again at the next tick
                log.warning("could not refresh the claim on %s: %s", entry_id, error)

    async def _emit(
        self, run_id: str, attempt: int, kind: bus.EventKind, data: dict[str, Any]
    ) -> None:
        key = bus.events_key(run_id)
        async with self.client.pipeline(transaction=False) as pipe:
            fields = bus.encode_event(attempt, kind, data, self.settings.name)
            pipe.xadd(key, fields, maxlen=bus.EVENTS_MAXLEN, approximate=True)  # type: ignore[arg-type]
            pipe.expire(key, bus.EVENTS_TTL_S)
            await pipe.execute()

    async def _finish(self, entry_id: str, run_id: str, attempt: int, result: RunResult) -> None:
        """Write the result (the first one wins), tell the readers, then ack."""
        if run_id:
            written: Any = await self.client.set(
                bus.result_key(run_id), result.model_dump_json(), nx=True, get=True,
                ex=bus.RESULT_TTL_S,
            )  # fmt: skip
            winner = json.loads(written) if written else result.model_dump(mode="json")
            await self._emit(run_id, attempt, "result", winner)
        await self.client.xack(self.stream, bus.GROUP, entry_id)

    async def _set_aside(
        self,
        entry_id: str,
        fields: dict[str, str],
        run_id: str,
        deliveries: int,
        hosts: int | None,
    ) -> None:
        reason = "unreadable" if hosts is None else f"delivered {deliveries} times"
        log.warning("run %s (%s) set aside: %s", run_id, entry_id, reason)
        dead = {**fields, "entry_id": entry_id, "reason": reason, "agent": self.settings.name}
        await self.client.xadd(
            bus.dead_key(self.settings.pool),
            dead,  # type: ignore[arg-type]
            maxlen=bus.DEAD_MAXLEN,
            approximate=True,
        )
        await self._finish(entry_id, run_id, deliveries, bus.set_aside_result(hosts))

    async def _heartbeat(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            info = self.runner.info
            sandbox = "trusted" if info.get("trusted") else "on"
            if info.get("sandbox_error"):
                sandbox = f"unavailable: {info['sandbox_error']}"
            beat = {
                "slots": self.settings.slots,
                "busy": len(self.running),
                "seen": time.time(),
                "ready": self.runner.ready,
                "sandbox": sandbox,
                "torch": info.get("torch"),
                "cuda_devices": info.get("cuda_devices", 0),
                "gpus": [gpu.get("name", "") for gpu in info.get("gpus", [])],
            }
            try:
                await self.client.hset(
                    bus.agents_key(self.settings.pool), self.settings.name, json.dumps(beat)
                )
            except redis.RedisError as error:  # the pull loop reports it; keep beating
                log.debug("heartbeat not sent: %s", error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.settings.heartbeat_s)


def _stopped() -> RunResult:
    return RunResult(status=RunStatus.INTERNAL_ERROR, duration_ms=0, message=bus.STOPPED_MESSAGE)

"""Lab runs on Redis, beside the job bus: any app process can follow or stop a run, whichever
process drives it.

    ranklab:lab:{id}:run      hash: user (the learner's id), worker (the process driving it),
                              bus_run (the bus id of the run's job, once it is queued)
    ranklab:lab:{id}:events   the run's log, one entry per event (fields `event`, `data` as
                              JSON) with ids 0-1, 0-2, …: entry 0-N is SSE id N-1, numbered as
                              the in-memory log numbers them. It ends with `end`, after which
                              nothing is appended; kept EVENTS_TTL_S after its last entry.
    ranklab:lab:{id}:alive    the driving process's lease: refreshed while it drives the run,
                              gone LEASE_S after that process died
    ranklab:lab:{id}:stop     a list: Stop pushes to it, the driver waits on it (BLPOP)

Readers follow a log through the process's StreamHub (app.fanout): one XREAD loop per run in
each process however many tabs follow it, readers capped (429 for a run, 503 for the process);
the hub's task looks at the lease whenever its read comes back empty.

The process that took the POST drives the run, as with `MemoryLiveRuns`: it relays the
executor's events, judges the checks, records the LabRun row, and on Stop (from any process)
its ranks are killed as the run is cancelled. A reader or a Stop that finds the lease gone and
no `end` cancels the run's job on its agent (the bus's cancel key), closes the log itself, once,
and records the row as cut off: nobody waits forever on a process that died, and its ranks do
not run on to their time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import redis
import redis.asyncio as aredis
from sqlalchemy.exc import SQLAlchemyError

from app.bus_client import CANCEL_TTL_S, aconnect, before_submit, process_name
from app.errors import TooManyRequests, Unavailable
from app.fanout import READERS, READERS_PER_STREAM, StreamHub, TooManyReaders
from app.labs.live import STOP_WAIT_S, Drive, Event, Frames, StopOutcome
from executor import bus
from executor.bus import EVENTS_MAXLEN, EVENTS_TTL_S

log = logging.getLogger("ranklab.labs")
LEASE_S = 10.0  # a driver silent this long is gone: its run is cut off
READ_BLOCK_S = 2.0  # a reader looks at the lease this often while nothing new arrives
STOP_TTL_S = 60

CUT_OFF = "This run was cut off: the server running it stopped. Run it again."
STOPPED_ORPHAN = "Stopped: the server running it had already stopped."
NO_QUEUE = "The run queue is unreachable right now; trying again…"
UNREACHABLE = "Runs are unavailable right now: the run queue is unreachable."
NO_CHECKS: dict[str, Any] = {"checks": [], "passed": False}
CUT_OFF_NOTICE: Event = ("unavailable", {"message": CUT_OFF})
STOPPED_ORPHAN_NOTICE: Event = ("stopped", {"message": STOPPED_ORPHAN})

# Append events unless the log has ended: nothing ever follows `end`, so a driver that
# finishes after its run was declared cut off cannot add a second ending.
# KEYS: events, run; ARGV: ttl, maxlen, name, data, … Returns 1, or 0 if it had ended.
APPEND = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if last[1] then
  local fields = last[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'event' and fields[i + 1] == 'end' then return 0 end
  end
end
for i = 3, #ARGV, 2 do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-*', 'event', ARGV[i], 'data', ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1
"""


def run_key(run_id: int) -> str:
    """Who the run belongs to, and which process drives it."""
    return f"ranklab:lab:{run_id}:run"


def events_key(run_id: int) -> str:
    """The run's log."""
    return f"ranklab:lab:{run_id}:events"


def alive_key(run_id: int) -> str:
    """The driving process's lease on the run."""
    return f"ranklab:lab:{run_id}:alive"


def stop_key(run_id: int) -> str:
    """Where Stop asks the driving process to stop the run."""
    return f"ranklab:lab:{run_id}:stop"


def _index(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[1]) - 1


def _entry_id(index: int) -> str:
    return f"0-{index + 1}"


def _ends(fields: dict[str, str]) -> bool:
    return fields.get("event") == "end"


def _entries(found: Any) -> list[tuple[int, str, dict[str, Any]]]:
    return [
        (_index(entry_id), fields["event"], json.loads(fields["data"]))
        for _stream, entries in found or []
        for entry_id, fields in entries
    ]


async def append(client: aredis.Redis, run_id: int, events: list[Event]) -> bool:
    """Append events to the run's log; False if it had already ended."""
    flat = [part for name, payload in events for part in (name, json.dumps(payload))]
    added: Any = await client.eval(
        APPEND, 2, events_key(run_id), run_key(run_id), EVENTS_TTL_S, EVENTS_MAXLEN, *flat
    )
    return bool(added)


async def _owner(client: aredis.Redis, run_id: int) -> str | None:
    """The id of the learner whose run it is, as text; None if the run is unknown here."""
    owner: Any = await client.hget(run_key(run_id), "user")
    return owner


async def _keep_bus_run(client: aredis.Redis, run_id: int, bus_run: str) -> None:
    """Keep the bus id of the run's job with the run, before the job is queued."""
    try:
        async with client.pipeline(transaction=True) as pipe:
            pipe.hset(run_key(run_id), "bus_run", bus_run)
            pipe.expire(run_key(run_id), EVENTS_TTL_S)
            await pipe.execute()
    except redis.RedisError as error:  # the run goes on; only a cut-off could not cancel it
        log.warning("lab run %s: its job's id not kept: %s", run_id, error)


async def _cancel_job(client: aredis.Redis, run_id: int) -> None:
    """Tell the agent to stop the run's job: nobody is left to follow it."""
    bus_run: Any = await client.hget(run_key(run_id), "bus_run")
    if bus_run:
        await client.set(bus.cancel_key(bus_run), "1", ex=CANCEL_TTL_S)


async def _tail(client: aredis.Redis, run_id: int) -> tuple[int, str] | None:
    """The last entry of the log (its index and event name), None while it is empty."""
    last: Any = await client.xrevrange(events_key(run_id), count=1)
    if not last:
        return None
    entry_id, fields = last[0]
    return _index(entry_id), fields["event"]


@dataclass
class StreamLog:
    """The RunLog of a run driven here: each event is appended to the run's stream."""

    client: aredis.Redis
    run_id: int

    async def add(self, name: str, payload: dict[str, Any]) -> None:
        """Append an event (a lost one is logged, not raised: the run and its record go on)."""
        try:
            if not await append(self.client, self.run_id, [(name, payload)]):
                log.warning("lab run %s: %s after its log was closed", self.run_id, name)
        except redis.RedisError as error:
            log.warning("lab run %s: %s not written: %s", self.run_id, name, error)


@dataclass
class RedisLiveRuns:
    """Lab runs whose logs live on Redis; `record_cut_off(run_id, status)` records a run whose
    driver has gone as ended (blocking: it runs in a worker thread)."""

    url: str
    record_cut_off: Callable[[int, str], bool]
    worker: str = field(default_factory=process_name)
    lease_s: float = LEASE_S
    read_block_s: float = READ_BLOCK_S
    readers_per_run: int = READERS_PER_STREAM  # SSE readers of one run in this process
    readers: int = READERS  # SSE readers in this process, all lab runs together
    running: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    _hub: StreamHub | None = field(default=None, init=False, repr=False)
    _hub_loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)

    def _client(self) -> aredis.Redis:
        # One per run driven or Stop: an asyncio connection belongs to the loop that made it.
        return aconnect(self.url)

    @property
    def hub(self) -> StreamHub:
        """The run logs this process follows, one XREAD loop per run for all its readers (one
        hub per event loop: a connection belongs to the loop that made it)."""
        loop = asyncio.get_running_loop()
        if self._hub is None or self._hub_loop is not loop:
            self._hub = StreamHub(
                self.url,
                _ends,
                self.readers_per_run,
                self.readers,
                block_s=self.read_block_s,
                idle=self._idle,
            )
            self._hub_loop = loop
        return self._hub

    async def start(self, run_id: int, user_id: int, drive: Drive) -> None:
        """Claim the run on Redis (its owner and this process's lease), then drive it here."""
        client = self._client()
        try:
            async with client.pipeline(transaction=True) as pipe:
                # A database restored or reset hands out ids again: a new run starts clean.
                pipe.delete(run_key(run_id), events_key(run_id), stop_key(run_id))
                pipe.hset(run_key(run_id), mapping={"user": str(user_id), "worker": self.worker})
                pipe.expire(run_key(run_id), EVENTS_TTL_S)
                pipe.set(alive_key(run_id), self.worker, px=int(self.lease_s * 1000))
                await pipe.execute()
        except redis.RedisError as error:  # readers replay its row; the driver records its end
            log.warning("lab run %s not announced on Redis: %s", run_id, error)
        task = asyncio.get_running_loop().create_task(
            self._drive(client, run_id, drive), name=f"lab-run-{run_id}"
        )
        self.running[run_id] = task
        task.add_done_callback(lambda _task: self.running.pop(run_id, None))

    async def _drive(self, client: aredis.Redis, run_id: int, drive: Drive) -> None:
        watcher: asyncio.Task[None] | None = None
        try:
            # Stop cancels this scope, not the task: anyio leaves the driver's shielded
            # recording alone, where a second task.cancel() would break into it.
            with (
                anyio.CancelScope() as stopping,
                before_submit(partial(_keep_bus_run, client, run_id)),
            ):
                watcher = asyncio.create_task(self._watch(client, run_id, stopping))
                await drive(StreamLog(client, run_id))
        finally:
            if watcher is not None:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
            await StreamLog(client, run_id).add("end", {})
            with contextlib.suppress(redis.RedisError):
                await client.delete(alive_key(run_id))  # after `end`: never "cut off" first
            await client.aclose()

    async def _watch(self, client: aredis.Redis, run_id: int, stopping: anyio.CancelScope) -> None:
        """Keep this process's lease fresh while the run lasts; stop it when asked.

        After a stop it goes on renewing the lease until the driver has recorded the run and
        ended the log (the driver then cancels this task): a slow record must not look like a
        dead driver to the process that asked for the stop, which would end the log itself."""
        refresh_s = self.lease_s / 4
        while True:
            try:
                if stopping.cancel_called:
                    await anyio.sleep(refresh_s)
                elif await client.blpop([stop_key(run_id)], timeout=bus.block_s(refresh_s)):
                    stopping.cancel()  # and renew at once: recording it may take a while
                await client.set(alive_key(run_id), self.worker, px=int(self.lease_s * 1000))
            except redis.RedisError as error:  # try again; readers cut it off if it lasts
                log.warning("lab run %s: lease not refreshed: %s", run_id, error)
                await anyio.sleep(refresh_s)

    async def follow(self, run_id: int, user_id: int, after: int) -> Frames | None:
        """The learner's run's frames after `after`, from whichever process drives it (429 or
        503 past the readers' caps)."""
        hub = self.hub

        async def look(client: aredis.Redis) -> tuple[str | None, tuple[int, str] | None]:
            owner = await _owner(client, run_id)
            return owner, await _tail(client, run_id) if owner == str(user_id) else None

        try:
            owner, tail = await hub.call(look)  # on a moment's connection of the hub's
        except redis.RedisError as error:
            raise Unavailable(UNREACHABLE) from error
        if owner != str(user_id):
            return None
        try:
            hub.admit(events_key(run_id))
        except TooManyReaders as error:  # a crowded run: 429; a crowded process: 503
            refusal = Unavailable if error.whole_process else TooManyRequests
            raise refusal(str(error)) from error
        return self._frames(hub, run_id, after, tail)

    async def _frames(
        self, hub: StreamHub, run_id: int, after: int, tail: tuple[int, str] | None
    ) -> Frames:
        if tail is not None and tail[1] == "end" and tail[0] <= after:
            yield tail[0], "end", {}  # the reader saw the end already: end its stream again
            return
        # A reader left open past the log's life reconnects (no id: it keeps its place).
        entries = hub.follow(events_key(run_id), _entry_id(after), time.monotonic() + EVENTS_TTL_S)
        try:
            async with contextlib.aclosing(entries):
                async for entry_id, fields in entries:
                    yield _index(entry_id), fields["event"], json.loads(fields["data"])
        except (redis.RedisError, TimeoutError):
            # No id: the browser reconnects with its last one and resumes when Redis is back.
            yield None, "unavailable", {"message": NO_QUEUE}
        except TooManyReaders as error:  # the cap filled up between admit and the first read
            yield None, "unavailable", {"message": str(error)}

    async def _idle(self, client: aredis.Redis, key: str) -> None:
        """Nothing new in a run's log for a read's while: a run whose driver has gone is ended
        here (cut off), once for every reader of it in this process."""
        run_id = int(key.split(":")[2])
        tail = await _tail(client, run_id)
        if tail is not None and tail[1] == "end":
            return  # written just after the read: the next read has it
        if not await client.exists(alive_key(run_id)):
            await self._close(client, run_id, "unavailable", CUT_OFF_NOTICE)

    async def _follow(
        self, client: aredis.Redis, run_id: int, after: int, orphaned: tuple[str, Event]
    ) -> Frames:
        """The log's frames after `after`, to `end` (what Stop waits for, on its own client).
        When nothing comes, look at the lease: a run whose driver has gone is ended here with
        `orphaned` (its status and notice)."""
        last = after
        while True:
            found = await client.xread(
                {events_key(run_id): _entry_id(last)}, block=bus.block_ms(self.read_block_s)
            )
            for index, name, payload in _entries(found):
                last = index
                yield index, name, payload
                if name == "end":
                    return
            if found:
                continue
            tail = await _tail(client, run_id)
            if tail is not None and tail[1] == "end":
                if tail[0] <= last:  # the reader saw the end already: end its stream again
                    yield tail[0], "end", {}
                    return
                continue  # written just after the read: the next read has it
            if not await client.exists(alive_key(run_id)):
                await self._close(client, run_id, *orphaned)

    async def _close(self, client: aredis.Redis, run_id: int, status: str, notice: Event) -> None:
        """End a run whose driver has gone: its job on the agent first (its ranks stop), then
        its row (if it is still marked running), then the events a reader sees, unless someone
        ended the log meanwhile. A row its driver recorded already (the driver only failed to
        end the log) gets just the end: its log shows the driver's own result and checks."""
        await _cancel_job(client, run_id)
        try:
            was_running = await anyio.to_thread.run_sync(self.record_cut_off, run_id, status)
        except SQLAlchemyError:  # the reader still gets an ending; the row waits for its sweep
            log.exception("lab run %s: its end could not be recorded", run_id)
            was_running = True
        ending = [notice, ("checks", NO_CHECKS)] if was_running else []
        await append(client, run_id, [*ending, ("end", {})])

    async def stop(self, run_id: int, user_id: int) -> StopOutcome:
        """Ask the driving process to stop the learner's run, and wait for its log to end; a
        run whose driver has gone is ended here."""
        client = self._client()
        try:
            if await _owner(client, run_id) != str(user_id):
                return StopOutcome.UNKNOWN
            tail = await _tail(client, run_id)
            if tail is not None and tail[1] == "end":
                return StopOutcome.ENDED
            if not await client.exists(alive_key(run_id)):
                await self._close(client, run_id, "stopped", STOPPED_ORPHAN_NOTICE)
                return StopOutcome.STOPPED
            async with client.pipeline(transaction=True) as pipe:
                pipe.rpush(stop_key(run_id), "1")
                pipe.expire(stop_key(run_id), STOP_TTL_S)
                await pipe.execute()
            # A live driver stops the run at once; a dead one's lease runs out first.
            with anyio.move_on_after(max(STOP_WAIT_S, self.lease_s + 2 * self.read_block_s)):
                after = -1 if tail is None else tail[0]
                frames = self._follow(client, run_id, after, ("stopped", STOPPED_ORPHAN_NOTICE))
                async with contextlib.aclosing(frames):
                    async for _frame in frames:
                        pass
            return StopOutcome.STOPPED
        except redis.RedisError as error:
            raise Unavailable(UNREACHABLE) from error
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def close(self) -> None:
        """Stop the runs driven here (the app is shutting down): each records "stopped"."""
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._hub is not None and self._hub_loop is asyncio.get_running_loop():
            await self._hub.aclose()  # the readers' reads of logs: each closes its connection

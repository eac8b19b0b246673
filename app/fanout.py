"""Follow each Redis stream once per app process and fan its entries out to every local reader.

Each SSE reader of a run used to hold a Redis connection of its own in an XREAD loop: a
hundred tabs on one run were a hundred connections and a hundred reads per event. Here one
task per stream reads it (one blocking XREAD on a connection only that task holds) and puts
each entry in the readers' bounded queues without waiting. A reader that falls a queue behind
is told to re-read what it missed from Redis (XRANGE from its last id, in pages), so it still
gets every entry, in order; a new reader joins the same way.

Who closes what, on every path (the hub holds no connection of its own):
- a stream's task opens its connection and closes it in its own `finally`, synchronously
  (`_drop`), so a task cancelled any number of times, or by the loop's shutdown, still closes it;
  it ends when its stream ends, when it fails, or when its last reader leaves (cancelled then,
  and its loop also stops once nobody reads);
- a reader's own short reads (catching up, the result) each run in a task of the hub's with a
  connection for that one command (at most SHORT_CONNECTIONS at a time), closed the same way;
  the reader waits on it through a shield, so a reader cancelled meanwhile leaves at once;
- a reader that leaves (done, failed, cancelled) only takes its queue out of the stream's set
  and, if it was the last, cancels the task: it never awaits the task, a lock or the read.
`aclose` (the app's shutdown) cancels the tasks left and waits for them a bounded while.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import redis
import redis.asyncio as aredis

from executor import bus

Entry = tuple[str, dict[str, str]]
RESYNC = "resync"  # read the stream from your last id: you joined, or fell behind
FAILED = "failed"  # the stream's task lost Redis
QUEUE_SIZE = 256  # entries a reader may lag behind before it re-reads them from Redis
PAGE = 200  # entries per catch-up read
READERS_PER_STREAM = 100
READERS = 2000
SHORT_CONNECTIONS = 4  # readers' own reads at a time: however many readers, no more connections
CLOSE_WAIT_S = 5.0  # how long shutdown waits for the streams' tasks (each closes its own)


class TooManyReaders(Exception):
    """Refused: the run, or this process (`whole_process`), has as many readers as it takes."""

    def __init__(self, message: str, whole_process: bool = False) -> None:
        super().__init__(message)
        self.whole_process = whole_process


def admit(of_run: int, in_all: int, per_run: int, total: int) -> None:
    """Raise TooManyReaders when one more reader, beside `of_run` readers of its run and
    `in_all` readers in this process, would pass a cap."""
    if of_run >= per_run:
        raise TooManyReaders(
            f"This run already has {per_run} readers here: close another tab "
            "following it, or try again when the run has ended."
        )
    if in_all >= total:
        raise TooManyReaders(
            f"This server is following as many runs as it can ({total} readers): "
            "try again in a minute.",
            whole_process=True,
        )


def order(entry_id: str) -> tuple[int, int]:
    """A stream id as a sortable pair."""
    millis, _, sequence = entry_id.partition("-")
    return int(millis), int(sequence or 0)


def _drop(client: aredis.Redis) -> None:
    """Close every connection of a single-connection client now, with no await: an owner
    that is cancelled, or whose loop is closing, cannot be stopped half-way. (redis-py's own
    `aclose` hands each close to a task that a cancellation can stop before it starts; and a
    connect cancelled mid-handshake leaves its socket in the pool, not on `client.connection`.)"""
    pool = client.connection_pool  # private to this client: from_url made it
    for connection in [*pool._available_connections, *pool._in_use_connections]:
        connection._close()  # the transport's close: nothing left for the loop to warn about
    client.connection = None  # closed: the client has nothing to warn about either


@contextlib.asynccontextmanager
async def _connection(url: str) -> AsyncIterator[aredis.Redis]:
    """A client on one connection of its own, closed however the block ends."""
    client = bus.aconnect_single(url)
    try:
        yield client
    finally:
        _drop(client)


@dataclass(eq=False)
class _Reader:
    queue: asyncio.Queue[Entry | str]


@dataclass(eq=False)
class _Stream:
    readers: set[_Reader] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    ready: bool = False  # its task knows where it reads from: a reader may catch up now


@dataclass
class StreamHub:
    """The streams this process follows, each read by one task, on the loop that made it.

    `ends(fields)` says which entry is a stream's last: its task stops after handing it on;
    `idle(client, key)`, if given, runs on the task's client whenever a read comes back empty
    (a lab run's log looks at its driver's lease there: app.labs.live_redis)."""

    url: str
    ends: Callable[[dict[str, str]], bool]
    per_stream: int = READERS_PER_STREAM
    total: int = READERS
    block_s: float = 2.0
    queue_size: int = QUEUE_SIZE
    idle: Callable[[aredis.Redis, str], Awaitable[None]] | None = None
    streams: dict[str, _Stream] = field(default_factory=dict)
    reads: int = 0  # XREADs issued, all streams together: what the tests count
    _short: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(SHORT_CONNECTIONS), repr=False
    )
    _tasks: set[asyncio.Task[None]] = field(default_factory=set, repr=False)

    def readers(self) -> int:
        """Readers following a stream now, all streams together."""
        return sum(len(stream.readers) for stream in self.streams.values())

    def admit(self, key: str) -> None:
        """Raise TooManyReaders when one more reader of `key` would pass a cap."""
        stream = self.streams.get(key)
        admit(len(stream.readers) if stream else 0, self.readers(), self.per_stream, self.total)

    async def call(self, command: Callable[[aredis.Redis], Awaitable[Any]]) -> Any:
        """Run one short command for a reader on a connection of its own (at most
        SHORT_CONNECTIONS at a time), closed as it returns or fails.

        The command runs in a task of the hub's, which the reader only waits on through a
        shield: a reader cancelled meanwhile leaves at once, whatever the command (or
        redis-py, or the semaphore) does with a cancellation, and the task still closes its
        connection when the command is done."""
        task = asyncio.get_running_loop().create_task(self._call(command))
        self._tasks.add(task)
        task.add_done_callback(_settled)
        task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(task)

    async def _call(self, command: Callable[[aredis.Redis], Awaitable[Any]]) -> Any:
        async with self._short, _connection(self.url) as client:
            return await command(client)

    async def follow(self, key: str, after: str, deadline: float) -> AsyncGenerator[Entry, None]:
        """Entries of stream `key` after id `after`, in order, to its last (see `ends`).

        Raises TooManyReaders past a cap, redis errors when Redis fails, TimeoutError past
        `deadline` (a time.monotonic() value)."""
        self.admit(key)
        reader = self._join(key)  # no await between admit and join: the caps hold exactly
        try:
            last = after
            while True:
                async with asyncio.timeout(deadline - time.monotonic()):
                    item = await reader.queue.get()
                if item == FAILED:
                    raise redis.ConnectionError("the stream's reader lost Redis")
                if item == RESYNC:
                    async for entry in self._catch_up(key, last):
                        last = entry[0]
                        yield entry
                        if self.ends(entry[1]):
                            return
                    continue
                assert isinstance(item, tuple)
                if order(item[0]) <= order(last):
                    continue  # read already, when it caught up
                last = item[0]
                yield item
                if self.ends(item[1]):
                    return
        finally:
            self._leave(key, reader)

    async def _catch_up(self, key: str, last: str) -> AsyncGenerator[Entry, None]:
        """The stream's entries after `last`, read in pages, each on a short connection."""
        page: Any = [None] * PAGE
        while len(page) == PAGE:
            page = await self.call(partial(_page, key=key, after=last))
            for entry in page:
                last = entry[0]
                yield entry

    def _join(self, key: str) -> _Reader:
        reader = _Reader(asyncio.Queue(self.queue_size))
        stream = self.streams.get(key)
        if stream is None:
            stream = self.streams[key] = _Stream()
            stream.task = asyncio.get_running_loop().create_task(
                self._read(key, stream), name=f"follow {key}"
            )
            self._tasks.add(stream.task)
            stream.task.add_done_callback(self._tasks.discard)
        stream.readers.add(reader)
        if stream.ready:
            reader.queue.put_nowait(RESYNC)
        return reader

    def _leave(self, key: str, reader: _Reader) -> None:
        """Take the reader out; the last one out stops the stream's task (without waiting)."""
        stream = self.streams.get(key)
        if stream is None or reader not in stream.readers:
            return
        stream.readers.discard(reader)
        if not stream.readers:  # nobody left to read for: stop reading
            del self.streams[key]
            if stream.task is not None:
                stream.task.cancel()

    async def _read(self, key: str, stream: _Stream) -> None:
        """The one XREAD loop of `key` in this process, handing each entry to every reader."""
        try:
            async with _connection(self.url) as client:
                newest: Any = await client.xrevrange(key, count=1)
                cursor = newest[0][0] if newest else "0-0"
                # Readers read up to here themselves; this task hands them what comes after.
                stream.ready = True
                for reader in stream.readers:
                    _offer(reader, RESYNC)
                if newest and self.ends(newest[0][1]):
                    return  # ended already: each reader's catch-up reads it all
                while stream.readers:  # stops even if a cancellation were swallowed
                    self.reads += 1
                    block = bus.block_ms(self.block_s)
                    found: Any = await client.xread({key: cursor}, block=block)
                    if not found and self.idle is not None:
                        await self.idle(client, key)
                    for _key, entries in found or []:
                        for entry_id, fields in entries:
                            cursor = entry_id
                            for reader in stream.readers:
                                _offer(reader, (entry_id, fields))
                            if self.ends(fields):
                                return
        except redis.RedisError:
            for reader in stream.readers:
                _offer(reader, FAILED)
        finally:
            if self.streams.get(key) is stream:
                del self.streams[key]

    async def aclose(self) -> None:
        """Stop following every stream (the app is shutting down); each task closes its own
        connection, and is waited for at most CLOSE_WAIT_S."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)


async def _page(client: aredis.Redis, key: str, after: str) -> Any:
    return await client.xrange(key, min=f"({after}", count=PAGE)


def _settled(task: asyncio.Task[Any]) -> None:
    """Mark a short command's outcome seen: its reader may have left without it."""
    if not task.cancelled():
        task.exception()


def _offer(reader: _Reader, item: Entry | str) -> None:
    """Queue an item for a reader without waiting: one that has fallen a queue behind is told
    to re-read from Redis instead (or that the stream failed)."""
    try:
        reader.queue.put_nowait(item)
    except asyncio.QueueFull:
        with contextlib.suppress(asyncio.QueueEmpty):
            while True:
                reader.queue.get_nowait()
        reader.queue.put_nowait(RESYNC if isinstance(item, tuple) else item)

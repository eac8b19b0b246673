"""Follow each Redis stream once per app process and fan its entries out to every local reader.

Each SSE reader of a run used to hold a Redis connection of its own in an XREAD loop: a
hundred tabs on one run were a hundred connections and a hundred reads per event. Here one
task per stream reads it (one blocking XREAD on one connection) and hands each entry to the
readers' bounded queues. A reader that falls a queue behind is never waited for: its queue is
emptied and it re-reads what it missed from Redis (XRANGE from its last id, in pages), so it
still gets every entry, in order. A new reader joins the same way: it reads what came before
from Redis, then what the stream's task hands it, skipping ids it has seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
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


class TooManyReaders(Exception):
    """Refused: the run, or this process (`whole_process`), has as many readers as it takes."""

    def __init__(self, message: str, whole_process: bool = False) -> None:
        super().__init__(message)
        self.whole_process = whole_process


def order(entry_id: str) -> tuple[int, int]:
    """A stream id as a sortable pair."""
    millis, _, sequence = entry_id.partition("-")
    return int(millis), int(sequence or 0)


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

    `ends(fields)` says which entry is a stream's last: its task stops after handing it on."""

    connect: Callable[[], aredis.Redis]
    ends: Callable[[dict[str, str]], bool]
    per_stream: int = READERS_PER_STREAM
    total: int = READERS
    block_s: float = 2.0
    queue_size: int = QUEUE_SIZE
    streams: dict[str, _Stream] = field(default_factory=dict)
    reads: int = 0  # XREADs issued, all streams together: what the tests count
    active: int = 0  # readers between joining and leaving, catching up or following
    _client: aredis.Redis | None = field(default=None, repr=False)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set, repr=False)

    @property
    def client(self) -> aredis.Redis:
        """The connections of this hub (one per followed stream, a few for short reads)."""
        if self._client is None:
            self._client = self.connect()
        return self._client

    def readers(self) -> int:
        """Readers following a stream now, all streams together."""
        return sum(len(stream.readers) for stream in self.streams.values())

    def admit(self, key: str) -> None:
        """Raise TooManyReaders when one more reader of `key` would pass a cap."""
        stream = self.streams.get(key)
        if stream is not None and len(stream.readers) >= self.per_stream:
            raise TooManyReaders(
                f"This run already has {self.per_stream} readers here: close another tab "
                "following it, or try again when the run has ended."
            )
        if self.readers() >= self.total:
            raise TooManyReaders(
                f"This server is following as many runs as it can ({self.total} readers): "
                "try again in a minute.",
                whole_process=True,
            )

    async def follow(self, key: str, after: str, deadline: float) -> AsyncGenerator[Entry, None]:
        """Entries of stream `key` after id `after`, in order, to its last (see `ends`).

        Raises TooManyReaders past a cap, redis errors when Redis fails, TimeoutError past
        `deadline` (a time.monotonic() value)."""
        self.admit(key)
        async with self.using():
            reader = self._join(key)
            entries = self._entries(key, reader, after, deadline)
            try:
                async with contextlib.aclosing(entries):
                    async for entry in entries:
                        yield entry
            finally:
                self._leave(key, reader)

    @contextlib.asynccontextmanager
    async def using(self) -> AsyncIterator[aredis.Redis]:
        """The hub's client for a reader's own short reads; the last reader out closes it."""
        self.active += 1
        try:
            yield self.client
        finally:
            self.active -= 1
            if self.active == 0:  # idle: hold no connection until the next reader
                with anyio.CancelScope(shield=True):
                    await self._shut()

    async def _entries(
        self, key: str, reader: _Reader, after: str, deadline: float
    ) -> AsyncGenerator[Entry, None]:
        last = after
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the stream did not end in time")
            item = await asyncio.wait_for(reader.queue.get(), left)
            if item == FAILED:
                raise redis.ConnectionError("the stream's reader lost the queue")
            if item == RESYNC:
                page: Any = [None] * PAGE
                while len(page) == PAGE:
                    page = await self.client.xrange(key, min=f"({last}", count=PAGE)
                    for entry_id, fields in page:
                        last = entry_id
                        yield entry_id, fields
                        if self.ends(fields):
                            return
                continue
            assert isinstance(item, tuple)
            if order(item[0]) <= order(last):
                continue  # read already, when it caught up
            last = item[0]
            yield item
            if self.ends(item[1]):
                return

    def _join(self, key: str) -> _Reader:
        reader = _Reader(asyncio.Queue(self.queue_size))
        stream = self.streams.get(key)
        if stream is None:
            stream = self.streams[key] = _Stream()
            stream.task = asyncio.get_running_loop().create_task(
                self._read(self.client, key, stream), name=f"follow {key}"
            )
            self._tasks.add(stream.task)
            stream.task.add_done_callback(self._tasks.discard)
        stream.readers.add(reader)
        if stream.ready:
            reader.queue.put_nowait(RESYNC)
        return reader

    def _leave(self, key: str, reader: _Reader) -> None:
        stream = self.streams.get(key)
        if stream is None or reader not in stream.readers:
            return
        stream.readers.discard(reader)
        if not stream.readers:  # nobody left to read for: stop reading
            del self.streams[key]
            if stream.task is not None:
                stream.task.cancel()

    async def _read(self, client: aredis.Redis, key: str, stream: _Stream) -> None:
        """The one XREAD loop of `key` in this process, handing each entry to every reader."""
        try:
            newest: Any = await client.xrevrange(key, count=1)
            cursor = newest[0][0] if newest else "0-0"
            # Readers read up to here themselves; this task hands them what comes after.
            stream.ready = True
            for reader in stream.readers:
                _offer(reader, RESYNC)
            while True:
                self.reads += 1
                found: Any = await client.xread({key: cursor}, block=bus.block_ms(self.block_s))
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

    async def _shut(self) -> None:
        """Let the streams' tasks finish (each was cancelled or has ended) and close the
        connections; a reader joining meanwhile gets new ones."""
        client, self._client = self._client, None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if client is not None:
            await client.aclose()


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

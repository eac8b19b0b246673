"""The executor as the service and the CLI see it: check, cache, queue, run, stream."""

from __future__ import annotations

import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

from executor.cache import ResultCache, cache_key
from executor.contract import OutputEvent, RunRequest, RunResult, RunStatus
from executor.gpus import Gpu, GpuAllocator
from executor.limits import check_gpus, check_request
from executor.pool import CapacityLimiter, ExecutorUnavailable, WarmPool
from executor.settings import ExecutorSettings

Event = OutputEvent | RunResult


class Executor:
    """Runs requests on a warm pool, bounded by capacity, answered from the cache when possible."""

    def __init__(self, settings: ExecutorSettings, pool: WarmPool | None = None) -> None:
        self.settings = settings
        self.pool = pool or WarmPool(settings)
        self.cache = ResultCache(settings.cache_entries, settings.cache_dir)
        self.capacity = CapacityLimiter(settings.max_concurrent_runs, settings.queue_limit)
        self.gpus = GpuAllocator(self.pool.gpus)

    @property
    def ready(self) -> bool:
        """Tell whether runs can be served now (and begin a restart if the pool died)."""
        if not self.pool.ready:
            self.pool.restart_if_dead()
        return self.pool.ready

    @property
    def info(self) -> dict[str, Any]:
        """Describe the warm process (torch version, sandbox state)."""
        return dict(self.pool.info or {})

    async def start(self) -> None:
        """Start the warm pool and wait until it is ready."""
        await self.pool.start_async()

    def close(self) -> None:
        """Stop the warm pool."""
        self.pool.close()

    async def open(self, request: RunRequest) -> AsyncIterator[Event]:
        """Check the request and take a slot (raising at once), then return its event stream.

        Raises LimitViolation, QueueFull or ExecutorUnavailable before any event is produced,
        so that HTTP can still answer 4xx/503 instead of a started stream. A run on GPUs takes
        its slot, then waits in line for its GPUs (gpus.GpuAllocator) holding it: the line's
        bound is then the queue's plus the slots. Both go back when the stream ends, however
        it ends, even if it is dropped unread.
        """
        check_request(request, self.settings.limits)
        needed = check_gpus(request, len(self.gpus.gpus))
        if not self.ready:
            raise ExecutorUnavailable("the executor is starting")
        key = cache_key(request, self.info.get("torch", ""), not self.settings.trusted)
        if request.use_cache:
            cached = self.cache.get(key)
            if cached is not None:
                return _replay(cached)
        await self.capacity.acquire()
        try:
            gpus = await self.gpus.acquire(needed)
        except BaseException:  # cancelled while waiting for GPUs
            self.capacity.release()
            raise
        lease = _Lease(self.capacity, self.gpus, gpus)
        stream = self._run(request, key, gpus, lease)
        # A stream never started runs no `finally`: give the slot and GPUs back when it goes.
        weakref.finalize(stream, lease.release)
        return stream

    async def run(self, request: RunRequest) -> RunResult:
        """Run a request and return only its result."""
        result: RunResult | None = None
        async for event in await self.open(request):
            if isinstance(event, RunResult):
                result = event
        assert result is not None
        return result

    async def _run(
        self, request: RunRequest, key: str, gpus: tuple[Gpu, ...], lease: _Lease
    ) -> AsyncIterator[Event]:
        try:
            async for event in self.pool.events(request, gpus):
                if event.get("event") == "output":
                    yield OutputEvent.model_validate(
                        {k: event[k] for k in ("rank", "stream", "text")}
                    )
                else:
                    result = RunResult.model_validate(event["result"])
                    if result.status is RunStatus.INTERNAL_ERROR and not self.pool.ready:
                        result.message = f"{result.message} (the warm process died; restarting)"
                    if request.store_result:
                        self.cache.put(key, result)
                    yield result
        finally:
            lease.release()


class _Lease:
    """A run's slot and GPUs, given back exactly once, from whichever exit path comes first."""

    def __init__(self, capacity: CapacityLimiter, allocator: GpuAllocator, gpus: tuple[Gpu, ...]):
        self.capacity, self.allocator, self.gpus = capacity, allocator, gpus
        self._released = False
        self._lock = threading.Lock()  # the finalizer may run on another thread

    def release(self) -> None:
        """Give the slot and the GPUs back (once)."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self.allocator.release(self.gpus)
        self.capacity.release()


async def _replay(result: RunResult) -> AsyncIterator[Event]:
    for rank in result.ranks:
        for stream, text in (("stdout", rank.stdout), ("stderr", rank.stderr)):
            if text:
                yield OutputEvent(rank=rank.rank, stream=stream, text=text)
    yield result

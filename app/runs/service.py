"""Run it: relay the executor's live per-rank output to the browser as server-sent events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import datetime
from typing import Any, Protocol

import anyio.to_thread
from starlette.requests import Request

from app import metrics
from app.accounts.models import User
from app.challenges.base import Backend, Launch
from app.executor_client import ExecutorClient, ExecutorUnavailable, NoExecutor, RunEvent
from app.runs import fair
from app.runs.fair import WAITING, FairRuns, Turn
from executor.bus import MAX_OUTPUT_EVENTS
from executor.contract import OutputEvent, RunRequest, RunResult

UNAVAILABLE = "Runs are unavailable right now; the question and its explanation still work."


class Launched(Protocol):
    """What can be run: an executable item, or a lab step."""

    @property
    def launch(self) -> Launch: ...


def run_request(
    item: Launched, code: str, *, timeout_s: float | None = None, use_cache: bool = True
) -> RunRequest:
    """The one way an item's snippet becomes a RunRequest: its launch settings, its code."""
    return RunRequest(
        code=code,
        nproc=item.launch.nproc,
        backend=item.launch.backend.value,
        timeout_s=timeout_s or item.launch.timeout_s,
        launcher=item.launch.launcher.value,
        gpus=item.launch.gpus,
        use_cache=use_cache,
    )


def _event(name: str, payload: object) -> str:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n"


CAPPED = "More output than the page shows live: the result below holds what each rank printed."


async def relay(
    source: AsyncIterator[RunEvent], cap: int = MAX_OUTPUT_EVENTS
) -> AsyncGenerator[RunEvent | str, None]:
    """The run's events, read off the executor as fast as it sends them, whatever pace the
    reader takes: a reader that reads slowly never holds the run past its limit. At most `cap`
    output events are kept (then "capped", once); the result always comes, last. Closing this
    iterator hangs up on the executor, which stops the run."""
    line: asyncio.Queue[RunEvent | str | BaseException | None] = asyncio.Queue()

    async def pump() -> None:
        shown = 0
        try:
            async with contextlib.aclosing(source):  # type: ignore[type-var]
                async for event in source:
                    if isinstance(event, OutputEvent):
                        shown += 1
                        if shown > cap:
                            if shown == cap + 1:
                                line.put_nowait("capped")
                            continue
                    line.put_nowait(event)
            line.put_nowait(None)
        except Exception as error:  # the reader raises it
            line.put_nowait(error)

    task = asyncio.get_running_loop().create_task(pump())
    try:
        while (found := await line.get()) is not None:
            if isinstance(found, BaseException):
                raise found
            yield found
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def sse_events(
    executor: ExecutorClient, request: RunRequest, turn: Turn | None = None
) -> AsyncIterator[str]:
    """Yield SSE frames: `queued` while the run waits its turn, `output` per chunk (`capped`
    once past the cap), then `result` (or `unavailable` on failure). The turn is given back
    however the stream ends."""
    try:
        if turn is not None and not turn.now():
            yield _event("queued", {"message": WAITING})
            await turn.wait()
        events = relay(executor.astream(request))
        async with contextlib.aclosing(events):
            async for event in events:
                if isinstance(event, OutputEvent):
                    yield _event("output", event.model_dump(mode="json"))
                elif isinstance(event, RunResult):
                    metrics.count_run("run_it", event.status.value)
                    yield _event("result", event.model_dump(mode="json"))
                else:
                    yield _event("capped", {"message": CAPPED})
    except ExecutorUnavailable:
        yield _event("unavailable", {"message": UNAVAILABLE})
    finally:
        if turn is not None:
            turn.release()


def gate(request: Request) -> FairRuns:
    """The app's fair gate that every run route claims a turn from (app.runs.fair)."""
    run_gate: FairRuns = request.app.state.run_gate
    return run_gate


def claim_turn(request: Request, user: User, address: str) -> Turn:
    """Claim the learner's turn at the gate in their party: their own once signed in, as a
    guest their client `address`'s (app.deps.client_address); 409, 429 or 503 before anything
    starts."""
    party = fair.party_of(str(user.id), user.is_guest, address)
    return gate(request).claim(str(user.id), party)


def turn_events(executor: ExecutorClient, order: RunRequest, turn: Turn) -> AsyncIterator[str]:
    """`sse_events` for a claimed turn, which goes back even if the stream is never started
    (the browser hung up before the response began)."""
    frames = sse_events(executor, order, turn)
    weakref.finalize(frames, turn.release)
    return frames


def available(executor: ExecutorClient) -> bool:
    """Whether the executor answers its health check (a short timeout)."""
    return executor.health() is not None


# How long pages trust the executor's last answer to its health check, in seconds.
HEALTH_FRESH_S = 2.0


class HealthWatch:
    """The executor's health as pages show it (`await watch.health(now)`): asked at most once
    every HEALTH_FRESH_S, by one request on a worker thread, the answer shared meanwhile.

    A question's feedback page says whether its snippet can be run. Asked by every page, a
    class's hundreds of pages a second each took a worker thread (and, with an executor, an
    HTTP request to it); now one request in an interval asks, and the others of that interval
    use its answer. A page may so say "available" for up to HEALTH_FRESH_S after the executor
    went down; the run itself then says it is unavailable.
    """

    def __init__(self, executor: ExecutorClient, fresh_s: float = HEALTH_FRESH_S) -> None:
        self.executor = executor
        self.fresh_s = fresh_s
        self._known: tuple[datetime, dict[str, Any] | None] | None = None
        self._asking: asyncio.Future[dict[str, Any] | None] | None = None

    async def health(self, now: datetime) -> dict[str, Any] | None:
        """The executor's health document, or None: as last asked, if that is recent."""
        if isinstance(self.executor, NoExecutor):
            return None  # nothing to ask
        known = self._known
        if known is not None and 0 <= (now - known[0]).total_seconds() < self.fresh_s:
            return known[1]
        asking = self._asking
        loop = asyncio.get_running_loop()
        if asking is None or asking.get_loop() is not loop:
            asking = self._asking = loop.create_task(self._ask(now))
        # Shielded: a request that gives up does not cancel the others' answer.
        return await asyncio.shield(asking)

    async def _ask(self, now: datetime) -> dict[str, Any] | None:
        try:
            document = await anyio.to_thread.run_sync(self.executor.health)  # HTTP, 1 s at most
        finally:
            self._asking = None
        self._known = (now, document)
        return document


def panel(health: dict[str, Any] | None, item: Launched) -> dict[str, Any]:
    """What the Run it panel shows, from the executor's health: whether runs are available,
    and the GPUs the snippet needs when the executor has fewer (it would refuse the run: the
    panel says why instead)."""
    needed = gpus_needed(item)
    here = int((health or {}).get("cuda_devices") or 0)
    return {
        "nproc": item.launch.nproc,
        "available": health is not None,
        "gpus_missing": needed if needed > here else 0,
        "gpus_here": here,
    }


def gpus_needed(item: Launched) -> int:
    """CUDA devices an item needs: what it declares, and one per rank for NCCL."""
    launch = item.launch
    return max(launch.gpus, launch.nproc if launch.backend is Backend.NCCL else 0)

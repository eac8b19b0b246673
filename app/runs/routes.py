"""Run it: the learner's live view of a snippet running across real ranks."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import StreamingResponse

from app.attempts import sightings
from app.bus_client import RedisExecutorClient
from app.challenges.schema import EXECUTABLE_KINDS
from app.db import end_read
from app.deps import (
    CatalogDep,
    CurrentUser,
    ExecutorDep,
    QuestionDep,
    SessionDep,
    client_address,
)
from app.errors import Conflict, NotFound, TooManyRequests, Unavailable
from app.executor_client import ExecutorUnavailable
from app.fanout import TooManyReaders
from app.runs import recorded
from app.runs import service as runs
from app.verification import evidence, proofs, variant_sets

router = APIRouter()


@router.get("/attempts/{attempt_id}/q/{number}/run")
def run_snippet(
    request: Request,
    asked: QuestionDep,
    user: CurrentUser,
    session: SessionDep,
    catalog: CatalogDep,
    executor: ExecutorDep,
) -> StreamingResponse:
    """Run it: stream each rank's output (SSE) once the question is closed, then the result
    (409 while the learner has a run going, 429 over their rate or their party's line, 503 with
    the whole line full); a proven hang's unchanged
    snippet gets the result verify recorded, at once (app.runs.recorded)."""
    attempt, row, item = asked.attempt, asked.row, asked.item
    loaded = catalog.get(attempt.set_id, attempt.content_version)
    if not isinstance(item, EXECUTABLE_KINDS) or loaded is None:
        raise NotFound("This question has no snippet to run.")
    if not row.status.closed:
        raise Conflict("Answer the question first: the run shows the answer.")
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    # A proven hang would hold a slot for its whole time-out to show what verify saw: serve that.
    proofs_path = request.app.state.settings.challenges_dir / proofs.FILE_NAME
    # A variant (pinned on the server's row, never named by the client) was proven as an item of
    # its own (`<item>@<variant>`, rendered): its recorded hang is looked up as verify wrote it.
    proven_as, proven = loaded, item
    if row.variant_key:
        proven_as = variant_sets.expanded(loaded)
        shown_id = variant_sets.variant_item_id(item.id, row.variant_key)
        proven = next((i for i in proven_as.challenge_set.items if i.id == shown_id), None)
    key = proofs.item_key(attempt.set_id, proven.id) if proven is not None else ""
    seen = (
        None
        if proven is None
        else recorded.lookup(proofs_path, key, evidence.item_hash(proven_as, proven))
    )
    if seen is not None:
        end_read(session)
        return StreamingResponse(
            recorded.frames(seen), media_type="text/event-stream", headers=headers
        )
    code = sightings.shown_code(loaded, item, row.variant_key)
    if code is None:
        raise NotFound("This question has no snippet to run.")
    order = runs.run_request(item, code)
    turn = runs.claim_turn(request, user, client_address(request))
    end_read(session)  # the run streams for seconds: hold no transaction meanwhile
    return StreamingResponse(
        runs.turn_events(executor, order, turn), media_type="text/event-stream", headers=headers
    )


STREAM_ID = re.compile(r"\d{1,20}-\d{1,20}")
RUN_ID = re.compile(r"[0-9a-f]{32}")


@router.get("/runs/{run_id}/events")
async def bus_run_events(
    run_id: str,
    user: CurrentUser,
    executor: ExecutorDep,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """A run on the job bus as SSE, each event's id its Redis stream id: a reader that
    reconnects with Last-Event-ID gets the rest, without gaps or repeats. The run id (128
    random bits, known only to whoever started the run) is what grants access to its output."""
    if not isinstance(executor, RedisExecutorClient):
        raise NotFound("Runs are not on a job bus here.")
    if not RUN_ID.fullmatch(run_id):  # like an unknown id: it names nothing
        raise NotFound("No such run, or its output has expired.")
    after = last_event_id if last_event_id and STREAM_ID.fullmatch(last_event_id) else None
    try:
        known = await executor.known(run_id)
    except ExecutorUnavailable as error:
        raise Unavailable(runs.UNAVAILABLE) from error
    if not known:
        raise NotFound("No such run, or its output has expired.")
    try:
        executor.admit(run_id)  # readers share one read of the run, up to a cap
    except TooManyReaders as error:  # a crowded run: 429; a crowded process: 503
        refusal = Unavailable if error.whole_process else TooManyRequests
        raise refusal(str(error)) from error
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        _bus_frames(executor, run_id, after), media_type="text/event-stream", headers=headers
    )


async def _bus_frames(
    executor: RedisExecutorClient, run_id: str, after: str | None
) -> AsyncIterator[str]:
    events = executor.events(run_id, after)
    try:
        async with contextlib.aclosing(events):  # a reader that hangs up frees the connection
            async for event_id, name, payload in events:
                yield f"id: {event_id}\nevent: {name}\ndata: {json.dumps(payload)}\n\n"
    except ExecutorUnavailable:
        yield f"event: unavailable\ndata: {json.dumps({'message': runs.UNAVAILABLE})}\n\n"
    except TooManyReaders as error:  # the cap filled up between admit and the first read
        yield f"event: unavailable\ndata: {json.dumps({'message': str(error)})}\n\n"

"""Run it: the learner's live view of a snippet running across real ranks."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from app.challenges.schema import EXECUTABLE_KINDS
from app.db import end_read
from app.deps import CatalogDep, ExecutorDep, QuestionDep, SessionDep
from app.errors import Conflict, NotFound
from app.runs import service as runs

router = APIRouter()


@router.get("/attempts/{attempt_id}/q/{number}/run")
def run_snippet(
    asked: QuestionDep, session: SessionDep, catalog: CatalogDep, executor: ExecutorDep
) -> StreamingResponse:
    """Run it: stream each rank's output (SSE) once the question is closed, then the result."""
    attempt, row, item = asked.attempt, asked.row, asked.item
    loaded = catalog.get(attempt.set_id)
    if not isinstance(item, EXECUTABLE_KINDS) or loaded is None:
        raise NotFound("This question has no snippet to run.")
    if not row.status.closed:
        raise Conflict("Answer the question first: the run shows the answer.")
    request = runs.run_request(item, loaded.code[item.id])
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    end_read(session)  # the run streams for seconds: hold no transaction meanwhile
    return StreamingResponse(
        runs.sse_events(executor, request), media_type="text/event-stream", headers=headers
    )

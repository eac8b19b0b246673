"""Pages about challenge sets: the home page and a set's introduction."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.attempts import service as attempts
from app.db import run_reads
from app.deps import CatalogDep, OptionalUser, SessionDep, SlugId
from app.errors import NotFound

router = APIRouter()

# The pages are `async def`: their reads run on the event loop where they cannot wait (SQLite)
# and on a worker thread where they can (app.db.run_reads); rendering needs no thread.


@router.get("/", response_class=HTMLResponse)
async def home(request: Request, catalog: CatalogDep, user: OptionalUser, session: SessionDep):
    """List the topics and their sets with the learner's status; staff also see broken files."""
    standing = {}
    if user and user.id:
        standing = await run_reads(session, attempts.standings, session, user.id)
    return request.app.state.templates.TemplateResponse(
        request,
        "home.html",
        {
            "topics": catalog.topics(),
            "standing": standing,
            "errors": catalog.errors if user and user.is_staff else [],
        },
    )


@router.get("/sets/{set_id}", response_class=HTMLResponse)
async def set_page(
    request: Request, set_id: SlugId, catalog: CatalogDep, user: OptionalUser, session: SessionDep
):
    """Introduce a set: what it covers, how long it takes, the badge, and a start button."""
    facts = catalog.facts_of(set_id)
    if facts is None:
        raise NotFound(f"No challenge set {set_id!r}.")
    standing = None
    if user and user.id:
        standing = await run_reads(session, attempts.standing, session, user.id, set_id)
    return request.app.state.templates.TemplateResponse(
        request,
        "set.html",
        {
            "set": facts.set,
            "topic": catalog.topic_of(set_id),
            "question_count": facts.question_count,
            "total_seconds": facts.total_seconds,
            "difficulty_mix": facts.difficulty_mix,
            "standing": standing,
        },
    )

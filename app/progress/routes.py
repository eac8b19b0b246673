"""My progress: earned badges and the history of attempts."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.attempts import service as attempts
from app.db import run_reads
from app.deps import CatalogDep, CurrentUser, SessionDep

router = APIRouter()


@router.get("/me/progress", response_class=HTMLResponse)
async def progress(request: Request, user: CurrentUser, session: SessionDep, catalog: CatalogDep):
    """List the badges earned and every attempt, newest first."""
    assert user.id is not None
    history = await run_reads(session, attempts.history, session, user.id)
    badges = []
    seen: set[str] = set()
    for attempt in sorted(history, key=lambda a: a.finished_at or a.started_at):
        if attempt.badge_earned and attempt.set_id not in seen:
            seen.add(attempt.set_id)
            loaded = catalog.get(attempt.set_id, attempt.content_version)
            badges.append(
                {"attempt": attempt, "badge": loaded.challenge_set.badge if loaded else None}
            )
    return request.app.state.templates.TemplateResponse(
        request, "progress.html", {"history": history, "badges": badges}
    )

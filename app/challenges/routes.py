"""Pages about challenge sets: the home page and a set's introduction."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app import reads
from app.attempts import rules as attempt_rules
from app.attempts import service as attempts
from app.classes import reports as classes
from app.deps import CatalogDep, NowDep, OptionalUser, Page, SlugId, page_route
from app.errors import NotFound
from app.progress import rules as path_rules
from app.progress import service as progress
from app.progress import zone as zones

router = APIRouter()

# The pages are `async def`: their reads run on the event loop where they cannot wait (SQLite)
# and on a worker thread where they can (app.reads.read); rendering needs no thread.


@page_route(router, "/")
async def home(page: Page) -> Response:
    """The course path with the learner's state in each topic, and the one next step ("Start
    here" on a first visit, "Continue" after); staff also see broken files."""
    user, catalog = page.user, page.catalog
    standing, dues = None, dict[str, classes.Due]()
    if user and user.id:
        standing = await reads.read(page.engine, progress.read_standing, user.id, page.now)
        zone = zones.of(page.request)
        dues = await reads.read(page.engine, classes.dues, user.id, page.now, zone)
    path = progress.path_of(catalog, standing)
    done, total = path_rules.completion(path)
    return page.render(
        "home.html",
        {
            "path": path,
            "waiting_for": path_rules.titles_waited_for(path),
            "next_step": path_rules.next_step(path, progress.open_attempt(catalog, standing)),
            "done": done,
            "total": total,
            "errors": catalog.errors if user and user.is_staff else [],
            "topic_dues": classes.by_topic(dues, catalog),
        },
    )


@router.get("/sets/{set_id}", response_class=HTMLResponse)
async def set_page(
    request: Request, set_id: SlugId, catalog: CatalogDep, user: OptionalUser, now: NowDep
):
    """Introduce a set: what it covers, how long it takes, the badge, when a class of the
    learner's has it due, and a start button."""
    facts = catalog.facts_of(set_id)
    if facts is None:
        raise NotFound(f"No challenge set {set_id!r}.")
    standing, dues = None, dict[str, classes.Due]()
    if user and user.id:
        engine = request.app.state.engine
        standing = await reads.read(engine, attempts.standing, user.id, set_id)
        dues = await reads.read(engine, classes.dues, user.id, now, zones.of(request))
    return request.app.state.templates.TemplateResponse(
        request,
        "set.html",
        {
            "set": facts.set,
            "topic": catalog.topic_of(set_id),
            "question_count": facts.question_count,
            "first_tries_needed": attempt_rules.first_tries_needed(facts.question_count),
            "total_seconds": facts.total_seconds,
            "difficulty_mix": facts.difficulty_mix,
            "standing": standing,
            "unproven": catalog.is_unproven("set", set_id),
            "due": dues.get(f"set:{set_id}"),
        },
    )

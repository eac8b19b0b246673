"""Pages about challenge sets: the home page and a set's introduction."""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.attempts import service as attempts
from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedSet
from app.deps import CatalogDep, OptionalUser, SessionDep
from app.errors import NotFound

router = APIRouter()


def _summary(loaded: LoadedSet) -> dict[str, object]:
    challenge_set = loaded.challenge_set
    return {
        "set": challenge_set,
        "question_count": len(challenge_set.items),
        "total_seconds": sum(item.time_limit for item in challenge_set.items),
        "difficulty_mix": Counter(item.difficulty.value for item in challenge_set.items),
    }


def _loaded_or_404(catalog: Catalog, set_id: str) -> LoadedSet:
    loaded = catalog.get(set_id)
    if loaded is None:
        raise NotFound(f"No challenge set {set_id!r}.")
    return loaded


@router.get("/", response_class=HTMLResponse)
def home(request: Request, catalog: CatalogDep, user: OptionalUser, session: SessionDep):
    """List the sets with the learner's status; staff also see broken challenge files."""
    standing = attempts.standings(session, user.id) if user and user.id else {}
    return request.app.state.templates.TemplateResponse(
        request,
        "home.html",
        {
            "sets": [_summary(loaded) for loaded in catalog.ordered()],
            "standing": standing,
            "errors": catalog.errors if user and user.is_staff else [],
        },
    )


@router.get("/sets/{set_id}", response_class=HTMLResponse)
def set_page(
    request: Request, set_id: str, catalog: CatalogDep, user: OptionalUser, session: SessionDep
):
    """Introduce a set: what it covers, how long it takes, the badge, and a start button."""
    loaded = _loaded_or_404(catalog, set_id)
    standing = attempts.standings(session, user.id).get(set_id) if user and user.id else None
    return request.app.state.templates.TemplateResponse(
        request, "set.html", {**_summary(loaded), "standing": standing}
    )

"""Instructors' pages: content files and their errors, set previews with keys (Verify, and
the previews of topics and labs: verify_routes.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlmodel import Session, col, select

from app.accounts.models import User
from app.challenges import variants
from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedSet
from app.challenges.schema import proven_by_run
from app.deps import CatalogDep, CsrfDep, ExecutorDep, SlugId, StaffUser
from app.errors import BadRequest, Conflict, NotFound
from app.publishing import service as publishing
from app.runs import service as runs

router = APIRouter(prefix="/staff")


def _loaded(catalog: Catalog, set_id: str, version: str | None = None) -> LoadedSet:
    """The set served now, or a version of it by content hash (a held draft, to preview)."""
    loaded = catalog.get(set_id, version)
    if loaded is None:
        raise NotFound(f"No valid challenge set {set_id!r} (see the content page for errors).")
    return loaded


def _owner(path: str, files: list[str]) -> str:
    """The YAML file an error belongs with: its own, or for a snippet or cheat sheet beside
    YAML files (an error in all_reduce.py), the first of them, so that file is not "valid"."""
    if path in files:
        return path
    folder = PurePosixPath(path).parent
    return next((file for file in files if PurePosixPath(file).parent == folder), path)


def _usernames(request: Request, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    with Session(request.app.state.engine) as session:
        rows = session.exec(select(User).where(col(User.id).in_(ids))).all()
        return {row.id: row.username or f"user {row.id}" for row in rows if row.id is not None}


@router.get("/content", response_class=HTMLResponse)
def content(request: Request, staff: StaffUser, catalog: CatalogDep):
    """Every challenge file with its validation state and errors as file:line:col, and for
    each set, topic and lab what is live and why a newer version is held."""
    errors: dict[str, list[Any]] = defaultdict(list)
    for error in catalog.errors:
        errors[_owner(error.path, catalog.files)].append(error)
    by_file = {loaded.path: loaded for loaded in catalog.sets.values()}
    publisher = catalog.publisher
    states = publisher.states() if publisher is not None else []
    failures = publisher.failures(catalog.sets.values()) if publisher is not None else {}
    by_path = publishing.paths_of(states)
    publishers = {s.live.published_by for s in states if s.live and s.live.published_by}
    files = [
        {
            "path": path,
            "loaded": by_file.get(path),
            "errors": errors.get(path, []),
            "state": by_path.get(path),
            "failure": failures.get(path),
        }
        for path in catalog.files
    ]
    shown = set(catalog.files)
    # A live version whose file is gone keeps serving: list it too.
    orphans = [s for s in states if s.live is not None and s.live.path not in shown]
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/content.html",
        {
            "files": files,
            "orphans": orphans,
            "error_count": len(catalog.errors),
            "held_count": sum(1 for s in states if s.held is not None),
            "usernames": _usernames(request, publishers),
            "topics": catalog.topics(),
        },
    )


@router.post("/content/reload", dependencies=[CsrfDep])
def reload_content(staff: StaffUser, catalog: CatalogDep):
    """Read the challenge folder again without a restart: what validates and is proven is
    published, the rest is held and the last live version keeps serving."""
    catalog.reload()
    return RedirectResponse("/staff/content", status_code=303)


@router.post("/content/publish", dependencies=[CsrfDep])
def publish_unproven(
    staff: StaffUser,
    catalog: CatalogDep,
    kind: str = Form(pattern="^(set|topic|lab)$"),
    unit_id: str = Form(max_length=100),
    version: str = Form(pattern="^[0-9a-f]{64}$"),
    confirm: str | None = Form(default=None, max_length=10),
):
    """Publish a held version although its keys are not proven (learners see it marked), once
    the staff member has ticked the box saying so: one click must not publish it."""
    if catalog.publisher is None:
        raise NotFound("This catalog has no publish gate.")
    if confirm != "yes":
        raise BadRequest(
            f"Nothing was published: tick the box under “Publish {kind} {unit_id} unproven” to "
            "confirm that learners will get questions whose keys no run has checked."
        )
    assert staff.id is not None
    try:
        catalog.publisher.publish_unproven(kind, unit_id, version, staff.id)
    except publishing.Refused as error:
        raise Conflict(str(error)) from error
    catalog.reload()
    return RedirectResponse("/staff/content", status_code=303)


@router.get("/sets/{set_id}/preview", response_class=HTMLResponse)
def preview(
    request: Request,
    set_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    version: str | None = None,
):
    """A set as instructors see it: keys, feedback, outcomes, explanations and snippets; with
    `?version=HASH`, that version (a held draft) instead of the one served."""
    loaded = _loaded(catalog, set_id, version)
    draft = (
        version if version is not None and version != catalog.version_of("set", set_id) else None
    )
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/preview.html",
        {
            "draft": draft,
            "query": f"?version={draft}" if draft else "",
            "loaded": loaded,
            "set": loaded.challenge_set,
            "executable": {item.id for item in loaded.challenge_set.items if proven_by_run(item)},
            "runs_available": runs.available(executor),
            # A parameterised item's texts are templates: show each variant as learners meet it.
            "variants_shown": {
                item.id: [
                    (variant, variants.render(item, variant.key))
                    for variant in variants.variants_of(item)
                ]
                for item in loaded.challenge_set.items
                if variants.params_of(item)
            },
        },
    )

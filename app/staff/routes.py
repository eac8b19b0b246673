"""Instructors' pages: content files and their errors, set previews with keys, verification."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlmodel import Session, col, select

from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedSet
from app.challenges.schema import ItemBase, proven_by_run
from app.deps import CatalogDep, CsrfDep, ExecutorDep, SlugId, StaffUser, VerifyJobsDep
from app.errors import Conflict, NotFound
from app.executor_client import ExecutorClient
from app.publishing import service as publishing
from app.runs import service as runs
from app.verification import jobs as verify_jobs
from app.verification import service as verification
from app.verification.jobs import VerifyJobs
from app.verification.rules import Verdict

router = APIRouter(prefix="/staff")
PREVIEW_REPEATS = 2  # enough to see rank order vary; `ranklab verify` uses 3


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
):
    """Publish a held version although its keys are not proven (learners see it marked)."""
    if catalog.publisher is None:
        raise NotFound("This catalog has no publish gate.")
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
        },
    )


def _executable_items(loaded: LoadedSet, item_id: str | None) -> list[ItemBase]:
    items: list[ItemBase] = [
        item
        for item in loaded.challenge_set.items
        if proven_by_run(item) and item_id in (None, item.id)
    ]
    if item_id is not None and not items:
        raise NotFound(f"No executable item {item_id!r} in this set.")
    return items


def _render_job(request: Request, jobs: VerifyJobs, loaded: LoadedSet, item_id: str | None) -> Any:
    job = jobs.get((loaded.challenge_set.id, item_id))
    base = f"/staff/sets/{loaded.challenge_set.id}"
    progress = job.progress() if job else []
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/_verify.html",
        {
            "job": job,
            "progress": progress,
            "poll_url": f"{base}/items/{item_id}/verify" if item_id else f"{base}/verify",
            "passed": all(entry.state != Verdict.FAIL.value for entry in progress),
            "describe_rank": verification.describe_rank,
        },
    )


def _start_job(
    request: Request,
    catalog: Catalog,
    executor: ExecutorClient,
    jobs: VerifyJobs,
    set_id: str,
    item_id: str | None,
    version: str | None = None,
) -> Any:
    loaded = _loaded(catalog, set_id, version)
    items = _executable_items(loaded, item_id)
    engine = request.app.state.engine
    verify_jobs.verify_in_background(
        jobs, executor, loaded, items, PREVIEW_REPEATS, engine, item_id
    )
    return _render_job(request, jobs, loaded, item_id)


@router.post("/sets/{set_id}/verify", dependencies=[CsrfDep], response_class=HTMLResponse)
def verify_set(
    request: Request,
    set_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    jobs: VerifyJobsDep,
    version: str | None = None,
):
    """Start verifying every executable item of the set (of a held draft, with `?version=`),
    or join the verification running."""
    return _start_job(request, catalog, executor, jobs, set_id, None, version)


@router.get("/sets/{set_id}/verify", response_class=HTMLResponse)
def verify_set_progress(
    request: Request, set_id: SlugId, staff: StaffUser, catalog: CatalogDep, jobs: VerifyJobsDep
):
    """Show the set's verification so far: each item pending, running, or its verdict."""
    return _render_job(request, jobs, _loaded(catalog, set_id), None)


@router.post(
    "/sets/{set_id}/items/{item_id}/verify", dependencies=[CsrfDep], response_class=HTMLResponse
)
def verify_item(
    request: Request,
    set_id: SlugId,
    item_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    jobs: VerifyJobsDep,
    version: str | None = None,
):
    """Start verifying one item (of a held draft, with `?version=`), or join its
    verification running."""
    return _start_job(request, catalog, executor, jobs, set_id, item_id, version)


@router.get("/sets/{set_id}/items/{item_id}/verify", response_class=HTMLResponse)
def verify_item_progress(
    request: Request,
    set_id: SlugId,
    item_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    jobs: VerifyJobsDep,
):
    """Show one item's verification so far: running, or its verdict beside what was observed."""
    loaded = _loaded(catalog, set_id)
    _executable_items(loaded, item_id)
    return _render_job(request, jobs, loaded, item_id)

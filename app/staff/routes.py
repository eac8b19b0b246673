"""Instructors' pages: content files and their errors, set previews with keys, verification."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedSet
from app.challenges.schema import ItemBase, proven_by_run
from app.deps import CatalogDep, CsrfDep, ExecutorDep, SlugId, StaffUser, VerifyJobsDep
from app.errors import NotFound
from app.executor_client import ExecutorClient
from app.runs import service as runs
from app.verification import jobs as verify_jobs
from app.verification import service as verification
from app.verification.jobs import VerifyJobs
from app.verification.rules import Verdict

router = APIRouter(prefix="/staff")
PREVIEW_REPEATS = 2  # enough to see rank order vary; `ranklab verify` uses 3


def _loaded(catalog: Catalog, set_id: str) -> LoadedSet:
    loaded = catalog.get(set_id)
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


@router.get("/content", response_class=HTMLResponse)
def content(request: Request, staff: StaffUser, catalog: CatalogDep):
    """Every challenge file with its validation state and errors as file:line:col."""
    errors: dict[str, list[Any]] = defaultdict(list)
    for error in catalog.errors:
        errors[_owner(error.path, catalog.files)].append(error)
    by_file = {loaded.path: loaded for loaded in catalog.sets.values()}
    files = [
        {"path": path, "loaded": by_file.get(path), "errors": errors.get(path, [])}
        for path in catalog.files
    ]
    return request.app.state.templates.TemplateResponse(
        request, "staff/content.html", {"files": files, "error_count": len(catalog.errors)}
    )


@router.post("/content/reload", dependencies=[CsrfDep])
def reload_content(staff: StaffUser, catalog: CatalogDep):
    """Read the challenge folder again without a restart (attempts keep their stable ids)."""
    catalog.reload()
    return RedirectResponse("/staff/content", status_code=303)


@router.get("/sets/{set_id}/preview", response_class=HTMLResponse)
def preview(
    request: Request, set_id: SlugId, staff: StaffUser, catalog: CatalogDep, executor: ExecutorDep
):
    """A set as instructors see it: keys, feedback, outcomes, explanations and snippets."""
    loaded = _loaded(catalog, set_id)
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/preview.html",
        {
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
) -> Any:
    loaded = _loaded(catalog, set_id)
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
):
    """Start verifying every executable item of the set, or join the verification running."""
    return _start_job(request, catalog, executor, jobs, set_id, None)


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
):
    """Start verifying one item, or join its verification running."""
    return _start_job(request, catalog, executor, jobs, set_id, item_id)


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

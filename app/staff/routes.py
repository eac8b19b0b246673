"""Instructors' pages: content files and their errors, set previews with keys (Verify, and
the previews of topics and labs: verify_routes.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedSet
from app.challenges.schema import proven_by_run
from app.deps import CatalogDep, CsrfDep, ExecutorDep, SlugId, StaffUser
from app.errors import NotFound
from app.runs import service as runs

router = APIRouter(prefix="/staff")


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
        request,
        "staff/content.html",
        {"files": files, "error_count": len(catalog.errors), "topics": catalog.topics()},
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

"""Instructors' pages: content files and their errors, set previews with keys, verification."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedSet
from app.challenges.schema import EXECUTABLE_KINDS
from app.deps import CatalogDep, CsrfDep, ExecutorDep, StaffUser
from app.errors import NotFound
from app.runs import service as runs
from app.verification import service as verification
from app.verification.rules import ItemReport, Verdict

router = APIRouter(prefix="/staff")
PREVIEW_REPEATS = 2  # enough to see rank order vary; `ranklab verify` uses 3


def _loaded(catalog: Catalog, set_id: str) -> LoadedSet:
    loaded = catalog.get(set_id)
    if loaded is None:
        raise NotFound(f"No valid challenge set {set_id!r} (see the content page for errors).")
    return loaded


@router.get("/content", response_class=HTMLResponse)
def content(request: Request, staff: StaffUser, catalog: CatalogDep):
    """Every challenge file with its validation state and errors as file:line:col."""
    errors: dict[str, list[Any]] = defaultdict(list)
    for error in catalog.errors:
        errors[error.path].append(error)
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
    request: Request, set_id: str, staff: StaffUser, catalog: CatalogDep, executor: ExecutorDep
):
    """A set as instructors see it: keys, feedback, outcomes, explanations and snippets."""
    loaded = _loaded(catalog, set_id)
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/preview.html",
        {
            "loaded": loaded,
            "set": loaded.challenge_set,
            "executable": {
                item.id for item in loaded.challenge_set.items if isinstance(item, EXECUTABLE_KINDS)
            },
            "runs_available": runs.available(executor),
        },
    )


def _verify(executor: Any, loaded: LoadedSet, item_ids: list[str]) -> list[ItemReport]:
    health = executor.health() or {}
    cuda_devices = int(health.get("cuda_devices", 0) or 0)
    reports = []
    for item in loaded.challenge_set.items:
        if item.id in item_ids and isinstance(item, EXECUTABLE_KINDS):
            reports.append(
                verification.verify_item(executor, loaded, item, PREVIEW_REPEATS, cuda_devices)
            )
    return reports


def _render_reports(request: Request, loaded: LoadedSet, reports: list[ItemReport]) -> Any:
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/_verify.html",
        {
            "set": loaded.challenge_set,
            "reports": reports,
            "passed": all(report.verdict is not Verdict.FAIL for report in reports),
            "describe_rank": verification.describe_rank,
        },
    )


@router.post("/sets/{set_id}/verify", dependencies=[CsrfDep], response_class=HTMLResponse)
def verify_set(
    request: Request, set_id: str, staff: StaffUser, catalog: CatalogDep, executor: ExecutorDep
):
    """Run every executable item of the set and show the observed output beside each key."""
    loaded = _loaded(catalog, set_id)
    item_ids = [item.id for item in loaded.challenge_set.items]
    return _render_reports(request, loaded, _verify(executor, loaded, item_ids))


@router.post(
    "/sets/{set_id}/items/{item_id}/verify", dependencies=[CsrfDep], response_class=HTMLResponse
)
def verify_item(
    request: Request,
    set_id: str,
    item_id: str,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
):
    """Run one item's snippet and show what was observed beside its key."""
    loaded = _loaded(catalog, set_id)
    item = loaded.challenge_set.item(item_id)
    if item is None or not isinstance(item, EXECUTABLE_KINDS):
        raise NotFound(f"No executable item {item_id!r} in this set.")
    return _render_reports(request, loaded, _verify(executor, loaded, [item_id]))

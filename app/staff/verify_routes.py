"""Staff Verify and preview of sets' items, topics and labs.

Verify runs what `ranklab verify` runs (app.verification.pipeline): the same choice (proven and
unchanged items skipped unless "all" is asked for), the same repeats, perturbed scheduling,
executor-fault retries and claim rules, and the same verdict lines. It runs as a background
job (app.verification.jobs) whose page polls itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse

from app.challenges.catalog import Catalog, TopicView
from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic
from app.deps import CatalogDep, CsrfDep, ExecutorDep, SlugId, StaffUser, VerifyJobsDep
from app.errors import NotFound
from app.executor_client import ExecutorClient
from app.runs import service as runs
from app.verification import incremental, pipeline, proofs
from app.verification import jobs as verify_jobs
from app.verification.jobs import JobKey, VerifyJobs
from app.verification.rules import Verdict

router = APIRouter(prefix="/staff")
RunAll = Annotated[bool, Form(alias="all")]
# A held draft's content hash (the content page links to it): preview and verify that version.
DraftVersion = Annotated[
    str | None, Query(pattern="^[0-9a-f]{64}$", description="A version to preview, by hash.")
]


@dataclass(frozen=True)
class Target:
    """What one Verify button verifies: the content given to `pipeline.choose`, the names it
    asks for (none: all of it), the job's key and the page the job's progress is polled at."""

    key: JobKey
    url: str
    sets: tuple[LoadedSet, ...] = ()
    labs: tuple[LoadedLab, ...] = ()
    topics: tuple[LoadedTopic, ...] = ()
    wanted: tuple[str, ...] = ()

    def choose(
        self, catalog: Catalog, executor: ExecutorClient | None, run_all: bool
    ) -> incremental.Selection:
        """What `ranklab verify --item …` would run, reading the folder's proofs file."""

        def now() -> incremental.Stamp:
            return incremental.executor_stamp(executor.health() if executor else None)

        return pipeline.choose(
            self.sets, self.labs, self.topics, self.wanted, catalog.root / proofs.FILE_NAME,
            run_all, now, lambda message: None,
        )  # fmt: skip

    def everything(self, catalog: Catalog) -> dict[str, tuple[str, str]]:
        """Every name the target holds, proven or not, with its verdict line's file and name."""
        names = pipeline.names(self.choose(catalog, None, run_all=True))
        if not names:
            raise NotFound("Nothing here has a snippet to run, so there is nothing to verify.")
        return names


def _set_target(
    catalog: Catalog, set_id: str, item_id: str | None, version: str | None = None
) -> Target:
    """The set served now or, with `version`, a held draft of it (publishing's gate)."""
    loaded = catalog.get(set_id, version)
    if loaded is None:
        raise NotFound(f"No valid challenge set {set_id!r} (see the content page for errors).")
    base = f"/staff/sets/{set_id}"
    query = f"?version={version}" if version else ""
    job = f"{set_id}@{version}" if version else set_id  # a draft's job is not the live set's
    if item_id is None:
        return Target((job, None), f"{base}/verify{query}", sets=(loaded,))
    if loaded.challenge_set.item(item_id) is None:
        raise NotFound(f"No item {item_id!r} in this set.")
    url = f"{base}/items/{item_id}/verify{query}"
    return Target((job, item_id), url, (loaded,), wanted=(proofs.item_key(set_id, item_id),))


def _topic(catalog: Catalog, topic_id: str) -> TopicView:
    topic = catalog.topic(topic_id)
    if topic is None:
        raise NotFound(f"No topic {topic_id!r} (see the content page for errors).")
    return topic


def _draft(catalog: Catalog, kind: str, unit_id: str, version: str | None) -> str | None:
    """The version asked for when it is not the one served now (a held draft), else None."""
    return version if version is not None and version != catalog.version_of(kind, unit_id) else None


def _topic_or_draft(catalog: Catalog, topic_id: str, draft: str | None) -> TopicView:
    if draft is None:
        return _topic(catalog, topic_id)
    topic = catalog.draft_topic(topic_id, draft)
    if topic is None:
        raise NotFound(f"No version {draft[:12]} of topic {topic_id!r}.")
    return topic


def _topic_target(catalog: Catalog, topic_id: str, version: str | None = None) -> Target:
    draft = _draft(catalog, "topic", topic_id, version)
    topic = _topic_or_draft(catalog, topic_id, draft)
    own = (topic.loaded_topic,) if topic.loaded_topic else ()
    job, query = (f"topic:{topic_id}@{draft}", f"?version={draft}") if draft else (
        f"topic:{topic_id}", ""
    )  # fmt: skip
    return Target((job, None), f"/staff/topics/{topic_id}/verify{query}", topics=own)


def _lab(catalog: Catalog, lab_id: str, draft: str | None = None) -> LoadedLab:
    lab = catalog.lab(lab_id) if draft is None else catalog.draft_lab(lab_id, draft)
    if lab is None:
        raise NotFound(f"No valid lab {lab_id!r} (see the content page for errors).")
    return lab


def _lab_target(catalog: Catalog, lab_id: str, version: str | None = None) -> Target:
    draft = _draft(catalog, "lab", lab_id, version)
    lab = _lab(catalog, lab_id, draft)
    job, query = (f"lab:{lab_id}@{draft}", f"?version={draft}") if draft else (f"lab:{lab_id}", "")
    return Target((job, None), f"/staff/labs/{lab_id}/verify{query}", labs=(lab,))


def _render(request: Request, jobs: VerifyJobs, catalog: Catalog, target: Target) -> Any:
    shown = target.everything(catalog)
    job = jobs.get(target.key)
    progress = job.progress() if job else []
    lines = {
        entry.item_id: pipeline.verdict_lines(*shown[entry.item_id], entry.report)
        for entry in progress
        if entry.report is not None and entry.item_id in shown
    }
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/_verify.html",
        {
            "job": job,
            "progress": progress,
            "poll_url": target.url,
            "passed": all(entry.state != Verdict.FAIL.value for entry in progress),
            "skipped": sum(entry.state == verify_jobs.SKIPPED for entry in progress),
            "lines": lines,
        },
    )


def _start(
    request: Request,
    catalog: Catalog,
    executor: ExecutorClient,
    jobs: VerifyJobs,
    target: Target,
    run_all: bool,
) -> Any:
    everything = target.everything(catalog)
    selection = target.choose(catalog, executor, run_all)
    chosen = pipeline.names(selection)
    skipped = [name for name in everything if name not in chosen]
    engine = request.app.state.engine
    verify_jobs.verify_in_background(jobs, executor, target.key, selection, skipped, engine)
    return _render(request, jobs, catalog, target)


@router.post("/sets/{set_id}/verify", dependencies=[CsrfDep], response_class=HTMLResponse)
def verify_set(
    request: Request,
    set_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    jobs: VerifyJobsDep,
    run_all: RunAll = False,
    version: str | None = None,
):
    """Start verifying the set as `ranklab verify --item SET` does (a held draft of it, with
    `?version=`), or join the one running."""
    target = _set_target(catalog, set_id, None, version)
    return _start(request, catalog, executor, jobs, target, run_all)


@router.get("/sets/{set_id}/verify", response_class=HTMLResponse)
def verify_set_progress(
    request: Request,
    set_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    jobs: VerifyJobsDep,
    version: str | None = None,
):
    """Show the set's verification so far: each item pending, running, skipped or its verdict."""
    return _render(request, jobs, catalog, _set_target(catalog, set_id, None, version))


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
    run_all: RunAll = False,
    version: str | None = None,
):
    """Start verifying one item (and its inline proof; of a held draft, with `?version=`), or
    join its verification running."""
    target = _set_target(catalog, set_id, item_id, version)
    return _start(request, catalog, executor, jobs, target, run_all)


@router.get("/sets/{set_id}/items/{item_id}/verify", response_class=HTMLResponse)
def verify_item_progress(
    request: Request,
    set_id: SlugId,
    item_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    jobs: VerifyJobsDep,
    version: str | None = None,
):
    """Show one item's verification so far: running, or its verdict beside what was observed."""
    return _render(request, jobs, catalog, _set_target(catalog, set_id, item_id, version))


@router.post("/topics/{topic_id}/verify", dependencies=[CsrfDep], response_class=HTMLResponse)
def verify_topic(
    request: Request,
    topic_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    jobs: VerifyJobsDep,
    run_all: RunAll = False,
    version: DraftVersion = None,
):
    """Start verifying a topic's proofs (named ones, cards' and items' inline ones; of a held
    draft, with `?version=`)."""
    target = _topic_target(catalog, topic_id, version)
    return _start(request, catalog, executor, jobs, target, run_all)


@router.get("/topics/{topic_id}/verify", response_class=HTMLResponse)
def verify_topic_progress(
    request: Request,
    topic_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    jobs: VerifyJobsDep,
    version: DraftVersion = None,
):
    """Show the topic's verification so far."""
    return _render(request, jobs, catalog, _topic_target(catalog, topic_id, version))


@router.post("/labs/{lab_id}/verify", dependencies=[CsrfDep], response_class=HTMLResponse)
def verify_lab(
    request: Request,
    lab_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    jobs: VerifyJobsDep,
    run_all: RunAll = False,
    version: DraftVersion = None,
):
    """Start verifying every step of a lab (of a held draft, with `?version=`): its solution
    passes its checks, its starter not."""
    target = _lab_target(catalog, lab_id, version)
    return _start(request, catalog, executor, jobs, target, run_all)


@router.get("/labs/{lab_id}/verify", response_class=HTMLResponse)
def verify_lab_progress(
    request: Request,
    lab_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    jobs: VerifyJobsDep,
    version: DraftVersion = None,
):
    """Show the lab's verification so far, step by step."""
    return _render(request, jobs, catalog, _lab_target(catalog, lab_id, version))


def _verifiable(catalog: Catalog, target: Target) -> bool:
    try:
        target.everything(catalog)
    except NotFound:
        return False
    return True


@router.get("/topics/{topic_id}/preview", response_class=HTMLResponse)
def preview_topic(
    request: Request,
    topic_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    version: DraftVersion = None,
):
    """A topic as instructors check it: summary, cards with their backs, explain items, proofs
    and cheat sheet; with `?version=HASH`, that version (a held draft) instead of the live one."""
    draft = _draft(catalog, "topic", topic_id, version)
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/topic_preview.html",
        {
            "topic": _topic_or_draft(catalog, topic_id, draft),
            "draft": draft,
            "query": f"?version={draft}" if draft else "",
            "verifiable": _verifiable(catalog, _topic_target(catalog, topic_id, draft)),
            "runs_available": runs.available(executor),
        },
    )


@router.get("/labs/{lab_id}/preview", response_class=HTMLResponse)
def preview_lab(
    request: Request,
    lab_id: SlugId,
    staff: StaffUser,
    catalog: CatalogDep,
    executor: ExecutorDep,
    version: DraftVersion = None,
):
    """A lab as instructors check it: each step with its starter, checks and solution; with
    `?version=HASH`, that version (a held draft) instead of the live one."""
    draft = _draft(catalog, "lab", lab_id, version)
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/lab_preview.html",
        {
            "loaded": _lab(catalog, lab_id, draft),
            "draft": draft,
            "query": f"?version={draft}" if draft else "",
            "runs_available": runs.available(executor),
        },
    )

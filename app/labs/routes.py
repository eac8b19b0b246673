"""The lab pages: a lab's steps, one step with its editor, runs streamed rank by rank (SSE,
resumable), checks judged on the real result, questions, drafts and progress.

Learner code is untrusted: it only ever runs in the executor's sandbox; a lab refuses to run
when the executor says its sandbox is off or unavailable."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Form, Header, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from sqlmodel import Session

from app import metrics, reads
from app.accounts.throttle import Throttle
from app.attempts import rules
from app.attempts.rules import ItemStatus
from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedLab
from app.config import Settings
from app.db import run_reads, utcnow, write_session
from app.deps import (
    CatalogDep,
    CsrfDep,
    CurrentUser,
    ExecutorDep,
    NowDep,
    OptionalUser,
    RowId,
    SessionDep,
    SettingsDep,
    SlugId,
    ThrottleDep,
    client_address,
    wants_json,
)
from app.errors import BadRequest, Conflict, NotFound, TooManyRequests, Unavailable
from app.executor_client import ExecutorBusy, ExecutorClient, ExecutorUnavailable
from app.kinds import order
from app.labs import newer, status_words
from app.labs import service as labs
from app.labs.live import Frames, LiveRuns, RunLog, StopOutcome
from app.labs.models import LabRun
from app.labs.schema import LabStep
from app.labs.verify import evaluate
from app.progress import service as course
from app.runs import service as runs
from app.runs.fair import WAITING, Turn
from app.runs.service import run_request
from executor.bus import MAX_OUTPUT_EVENTS
from executor.contract import OutputEvent, RunResult

router = APIRouter()
SHOW_SOLUTION_AFTER = 2  # failed runs
# When the executor's queue is full, a run is offered again every second for up to a minute.
BUSY_RETRY_S, BUSY_WAIT_S = 1.0, 60.0


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _learners_lab(
    catalog: Catalog, session: Session, user_id: int | None, lab_id: str
) -> tuple[LoadedLab, str | None]:
    """The lab as the learner's progress started it (its version, kept through Reloads as a
    timed attempt keeps its set's), else the one served now; and that version's hash."""
    kept = labs.kept_version(session, user_id, lab_id) if user_id is not None else None
    loaded = catalog.lab_kept(lab_id, kept)
    if loaded is None:
        raise NotFound(f"No lab {lab_id!r}.")
    return loaded, kept or catalog.version_of("lab", lab_id)


def _step(loaded: LoadedLab, step_id: str) -> tuple[int, LabStep]:
    for index, step in enumerate(loaded.lab.steps):
        if step.id == step_id:
            return index, step
    raise NotFound(f"No step {step_id!r} in this lab.")


class Locked(Conflict):
    """A step whose previous step is not passed yet."""


def _question_seed(settings: Settings, lab_id: str, user_id: int) -> str:
    """The order seed of a lab's questions for one learner (app.kinds.order): the page shows
    them with it and an answer is read with it."""
    return order.seed(settings.secret_key, "lab", lab_id, user_id)


def _progress(session: Session, user_id: int | None, loaded: LoadedLab) -> dict[str, Any]:
    found = labs.states(session, user_id, loaded.lab.id) if user_id is not None else {}
    passed = {step_id for step_id, state in found.items() if state.passed_at is not None}
    return {"states": found, "passed": passed, "open": labs.unlocked(loaded, passed)}


@router.get("/topics/{topic_id}/labs", response_class=HTMLResponse)
async def topic_labs(topic_id: SlugId, catalog: CatalogDep) -> Response:
    """A topic's labs: the first one, or the topic page's list of them."""
    topic = catalog.topic(topic_id)
    if topic is None or not topic.labs:
        raise NotFound(f"No labs in topic {topic_id!r}.")
    if len(topic.labs) == 1:
        return _redirect(f"/labs/{topic.labs[0].lab.id}")
    return _redirect(f"/topics/{topic_id}#labs")


@router.get("/labs/{lab_id}", response_class=HTMLResponse)
async def lab_page(
    request: Request,
    lab_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    now: NowDep,
    moved: bool = False,
):
    """A lab: what it builds, its steps and where the learner stands in each; and, when a newer
    version is live than the one their progress began, what changed and the offer to move."""
    user_id = user.id if user else None
    loaded, _version = await run_reads(session, _learners_lab, catalog, session, user_id, lab_id)
    progress = await run_reads(session, _progress, session, user_id, loaded)
    offer = await run_reads(session, _newer_offer, catalog, session, user_id, loaded)
    suggestion = None
    finished = all(step.id in progress["passed"] for step in loaded.lab.steps)
    if user_id is not None and finished:  # the path's one next step, as home shows it
        engine = request.app.state.engine
        suggestion = await reads.read(engine, course.next_step_of, catalog, user_id, now)
    return request.app.state.templates.TemplateResponse(
        request,
        "lab.html",
        {
            "loaded": loaded,
            "topic": catalog.topic_of_lab(lab_id),
            "suggestion": suggestion,
            **progress,
            "newer": offer,
            "moved": moved,
        },
    )


def _newer_offer(
    catalog: Catalog, session: Session, user_id: int | None, loaded: LoadedLab
) -> dict[str, Any] | None:
    """The newer live version of the lab than the one the learner's progress began (its hash,
    what it changes, whether they chose to stay), or None."""
    lab_id = loaded.lab.id
    kept = labs.kept_version(session, user_id, lab_id) if user_id is not None else None
    live, live_lab = catalog.version_of("lab", lab_id), catalog.lab(lab_id)
    if kept is None or live is None or live == kept or live_lab is None or live_lab is loaded:
        return None
    assert user_id is not None
    return {
        "version": live,
        "changes": newer.changes(loaded, live_lab),
        "stayed": labs.stayed_on(session, user_id, lab_id) == live,
    }


def _offered(
    catalog: Catalog, session: Session, user_id: int, lab_id: str, offered: str
) -> tuple[str, LoadedLab, LoadedLab]:
    """The learner's kept version with its lab and the newer live lab, if `offered` (the
    version the page offered) is still the live one; else a clear 409."""
    kept = labs.kept_version(session, user_id, lab_id)
    live, live_lab = catalog.version_of("lab", lab_id), catalog.lab(lab_id)
    if kept is None or live is None or live_lab is None or kept == live:
        raise Conflict("There is no newer version of this lab to move to: you are on the latest.")
    if offered != live:
        raise Conflict("Another version of this lab was published since that page: look again.")
    return kept, catalog.lab_kept(lab_id, kept) or live_lab, live_lab


OfferedVersion = Annotated[str, Form(pattern="^[0-9a-f]{64}$", description="The newer version.")]


@router.post("/labs/{lab_id}/move", dependencies=[CsrfDep])
def move_lab(
    lab_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    now: NowDep,
    version: OfferedVersion,
) -> Response:
    """Move the learner's progress to the newer version the page offered: unchanged steps keep
    their state, changed steps start over."""
    assert user.id is not None
    kept, loaded, live_lab = _offered(catalog, session, user.id, lab_id, version)
    restarted = newer.changes(loaded, live_lab).restarted
    labs.move_to(session, user.id, lab_id, (kept, version), restarted, now)
    return _redirect(f"/labs/{lab_id}?moved=1")


@router.post("/labs/{lab_id}/stay", dependencies=[CsrfDep])
def stay_on_lab(
    lab_id: SlugId, catalog: CatalogDep, user: CurrentUser, session: SessionDep,
    version: OfferedVersion,
) -> Response:  # fmt: skip
    """Keep the version the learner began; the lab page stops urging the newer one."""
    assert user.id is not None
    _offered(catalog, session, user.id, lab_id, version)
    labs.stay_on(session, user.id, lab_id, version)
    return _redirect(f"/labs/{lab_id}")


def _step_context(
    session: Session, user_id: int, loaded: LoadedLab, index: int, step: LabStep
) -> dict[str, Any]:
    progress = _progress(session, user_id, loaded)
    if not progress["open"][index]:
        raise Locked("Pass the previous step first: its checks and its questions.")
    state = progress["states"].get(step.id)
    since = state.restarted_at if state is not None else None
    right = labs.questions_right(session, user_id, loaded.lab.id, step.id, since)
    last = labs.last_run(session, user_id, loaded.lab.id, step.id)
    return {
        **progress,
        "state": state,
        "code": labs.opening_code(loaded, step, progress["states"]),
        "right": right,
        "last_run": last,
        "last_checks": json.loads(last.checks) if last and last.checks else None,
        "last_result": json.loads(last.result) if last and last.result else None,
    }


@router.get("/labs/{lab_id}/steps/{step_id}", response_class=HTMLResponse)
async def step_page(
    request: Request,
    lab_id: SlugId,
    step_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    show_solution: bool = False,
):
    """One step: instructions, the editor (your draft), rank count, Run and Stop, each rank's
    pane, the checks, the questions, and the way on once the step is passed."""
    assert user.id is not None
    loaded, _version = await run_reads(session, _learners_lab, catalog, session, user.id, lab_id)
    index, step = _step(loaded, step_id)
    context = await run_reads(session, _step_context, session, user.id, loaded, index, step)
    state = context["state"]
    failed = state.failed_runs if state else 0
    passed = bool(state and state.passed_at)
    solution_after = solution_threshold(step)
    may_see_solution = failed >= solution_after or passed
    questions = [
        {
            "question": question,
            "q": rules.public_question(
                question,
                ItemStatus.CORRECT if question.id in context["right"] else ItemStatus.OPEN,
                None,
                0,
                0,
                False,
                _question_seed(settings, loaded.lab.id, user.id),
            ),
        }
        for question in step.questions
    ]
    steps = loaded.lab.steps
    return request.app.state.templates.TemplateResponse(
        request,
        "lab_step.html",
        {
            **context,
            "loaded": loaded,
            "step": step,
            "index": index,
            "following": steps[index + 1] if index + 1 < len(steps) else None,
            "questions": questions,
            "failed": failed,
            # Hint k shows after k failed runs of the learner's own code (all once passed).
            "hints": step.hints if passed else step.hints[:failed],
            "may_see_solution": may_see_solution,
            "solution": loaded.solutions[step.id] if show_solution and may_see_solution else None,
            "show_solution_after": solution_after,
            "topic": catalog.topic_of_lab(lab_id),
            "words": status_words,
            "script_words": status_words.for_script(),
        },
    )


def solution_threshold(step: LabStep) -> int:
    """Failed runs before "Show solution" is offered: every hint comes first."""
    return max(SHOW_SOLUTION_AFTER, len(step.hints) + 1)


@router.post("/labs/{lab_id}/steps/{step_id}/draft", dependencies=[CsrfDep])
def save_draft(
    lab_id: SlugId,
    step_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    code: Annotated[str, Form()],
) -> Response:
    """Keep the learner's code (the editor saves as they type; survives reload and restart)."""
    assert user.id is not None
    loaded, version = _learners_lab(catalog, session, user.id, lab_id)
    _step(loaded, step_id)
    _check_code(code, settings.lab_code_max_chars)
    labs.save_draft(session, user.id, lab_id, step_id, code, now, version)
    return Response(status_code=204)


@router.post("/labs/{lab_id}/steps/{step_id}/reset", dependencies=[CsrfDep])
def reset_step(
    lab_id: SlugId,
    step_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    now: NowDep,
) -> Response:
    """Throw the draft away: the step opens with its starter again."""
    assert user.id is not None
    loaded, version = _learners_lab(catalog, session, user.id, lab_id)
    _step(loaded, step_id)
    labs.save_draft(session, user.id, lab_id, step_id, None, now, version)
    return _redirect(f"/labs/{lab_id}/steps/{step_id}")


def _check_code(code: str, limit: int) -> None:
    if len(code) > limit:
        raise BadRequest(f"The code is {len(code)} characters long; a run takes at most {limit}.")
    try:
        code.encode("utf-8")
    except UnicodeEncodeError as error:
        raise BadRequest("The code holds a character that is not valid text.") from error


def _sandboxed(executor: ExecutorClient) -> str | None:
    """Why learner code cannot run now (None: it can, in the sandbox)."""
    health = executor.health()
    if health is None:
        return "Runs are unavailable right now: the executor is not answering."
    sandbox = str(health.get("sandbox", ""))
    if sandbox != "on":
        return f"Runs are unavailable: your code only runs in the sandbox, and it is {sandbox}."
    return None


@router.post("/labs/{lab_id}/steps/{step_id}/runs", dependencies=[CsrfDep])
async def start_run(
    request: Request,
    lab_id: SlugId,
    step_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
    throttle: ThrottleDep,
    now: NowDep,
    code: Annotated[str, Form()],
    nproc: Annotated[int, Form(ge=1, le=8)],
) -> Response:
    """Start a run of the learner's code with the rank count they chose; the page follows its
    events. One run at a time per learner, a few a minute, always in the sandbox."""
    assert user.id is not None
    loaded, version = await run_reads(session, _learners_lab, catalog, session, user.id, lab_id)
    index, step = _step(loaded, step_id)
    _check_code(code, settings.lab_code_max_chars)
    if nproc not in step.rank_choices:
        raise BadRequest(f"This step runs with {', '.join(map(str, step.rank_choices))} ranks.")
    context = await run_reads(session, _step_context, session, user.id, loaded, index, step)
    start = labs.starting_code(loaded, step, context["states"])
    refused = await run_in_threadpool(_sandboxed, executor)
    # A refusal is raised: the app's handler answers JSON or a page, with Retry-After if known.
    if refused is not None:
        raise Unavailable(refused)
    over = _over_limit(throttle, user.id)
    if over is not None:
        raise TooManyRequests(*over)
    # One run at a time across Run it, lessons and labs; their shared rate and line.
    turn = runs.claim_turn(request, user, client_address(request))
    try:
        run = await run_in_threadpool(
            labs.start_run, session, user.id, lab_id, step_id, nproc, code, now, version
        )
    except BaseException:
        turn.release()
        raise
    assert run.id is not None
    # The learner's own code: neither served from the shared cache nor written to it.
    order = run_request(step, code, use_cache=False).model_copy(
        update={"nproc": nproc, "store_result": False}
    )
    engine = request.app.state.engine
    counts = not labs.as_it_is(code, start)
    await _live_runs(request).start(
        run.id,
        user.id,
        lambda live: _drive(live, executor, order, step, run, engine, counts, turn),
    )
    events = f"/labs/runs/{run.id}/events"
    if wants_json(request):
        return JSONResponse({"run_id": run.id, "events": events}, status_code=201)
    # Without JavaScript: the step page reloads itself until the run has ended.
    return _redirect(f"/labs/{lab_id}/steps/{step_id}#run")


def _live_runs(request: Request) -> LiveRuns:
    """The lab runs in flight: this process's, or every process's on the job bus (app.main)."""
    live_runs: LiveRuns = request.app.state.live_runs
    return live_runs


def _over_limit(throttle: Throttle, user_id: int) -> tuple[str, int] | None:
    refusal = throttle.lab_run(user_id)
    if refusal is None:
        return None
    wait = refusal.retry_after_s
    return f"That is a lot of runs in a minute: wait {wait} seconds, then run again.", wait


async def _drive(
    live: RunLog,
    executor: ExecutorClient,
    order: Any,
    step: LabStep,
    run: LabRun,
    engine: Any,
    counts: bool = True,
    turn: Turn | None = None,
) -> None:
    """Relay the executor's events to the run's readers, then judge and record the run (a
    failed run counts towards hints and the solution only when `counts`). The run waits for
    its `turn` at the executor first, and gives it back however it ends."""
    result: RunResult | None = None
    status = "unavailable"
    printed: dict[int, dict[str, str]] = {}  # what each rank printed, kept if Stop comes
    started = time.monotonic()
    try:
        if turn is not None and not turn.now():
            await live.add("queued", {"message": WAITING})
            await turn.wait()
        waited = 0.0
        while True:
            try:
                relayed = 0
                async for event in executor.astream(order):
                    if isinstance(event, OutputEvent):
                        streams = printed.setdefault(event.rank, {"stdout": "", "stderr": ""})
                        streams[event.stream] += event.text  # bounded by the executor's cut
                        relayed += 1
                        if relayed <= MAX_OUTPUT_EVENTS:  # past it, the result shows the rest
                            await live.add("output", event.model_dump(mode="json"))
                    else:
                        result = event
                        status = event.status.value
                        metrics.count_run("lab", status)
                        sent = event.model_dump(mode="json")
                        # Each rank's end in words, a killed rank's with why (lab.js shows it).
                        sent["rank_words"] = status_words.ranks_said(sent)
                        await live.add("result", sent)
                break
            except ExecutorBusy:  # every slot taken and the queue full: wait our turn
                if waited >= BUSY_WAIT_S:
                    raise
                if waited == 0:
                    await live.add("queued", {"message": "Many runs at once: yours waits…"})
                await anyio.sleep(BUSY_RETRY_S)
                waited += BUSY_RETRY_S
    except ExecutorUnavailable as error:
        await live.add("unavailable", {"message": f"Runs are unavailable right now ({error})."})
    except BaseException:  # Stop (cancelled), or the app stopping: the ranks are killed
        status = "stopped"
        raise
    finally:
        if turn is not None:
            turn.release()
        # Judged by the checks for the count it ran on (a check may hold at some counts only).
        judging = step.checks_for(order.nproc)
        checks = evaluate(judging, result) if result is not None else []
        passed = result is not None and all(check.passed for check in checks)
        shown = [
            {"says": c.says, "passed": c.passed, "problems": c.problems, "diff": c.diff}
            for c in checks
        ]
        kept = result.model_dump(mode="json") if result else None
        if status == "stopped" and kept is None and printed:
            kept = _stopped_result(printed, time.monotonic() - started)
        finished = labs.Finished(status, kept, shown, passed, counts)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_record, engine, run, finished, step)
            if status == "stopped":
                message = "Stopped by you: every rank was killed; what it printed stays above."
                await live.add("stopped", {"message": message})
            await live.add("checks", {"checks": shown, "passed": passed})


def _stopped_result(printed: dict[int, dict[str, str]], seconds: float) -> dict[str, Any]:
    """What a stopped run is kept as: each rank's output so far (a reload shows it, as the
    page did), in the shape of a result, with "stopped" for the run and its ranks."""
    ranks = [
        {"rank": rank, "status": "stopped", "stdout": streams["stdout"],
         "stderr": streams["stderr"], "truncated": False, "stuck": None}
        for rank, streams in sorted(printed.items())
    ]  # fmt: skip
    return {"status": "stopped", "duration_ms": round(seconds * 1000), "ranks": ranks}


def _record(engine: Any, run: LabRun, finished: labs.Finished, step: LabStep) -> None:
    with write_session(engine) as session:
        labs.finish_run(session, run, finished, step, utcnow())


def record_cut_off(engine: Any, run_id: int, status: str) -> bool:
    """Record a run whose driving process went away as ended with `status`, unless its driver
    recorded it first (app.labs.live_redis); return whether it was still marked running."""
    with write_session(engine) as session:
        return labs.cut_off(session, run_id, status, utcnow())


@router.get("/labs/runs/{run_id}/events")
async def run_events(
    request: Request,
    run_id: RowId,
    user: CurrentUser,
    session: SessionDep,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """The run's events as SSE, each with an id: a reader that reconnects with Last-Event-ID
    gets what it missed. A run no longer live (here, or on the job bus) is replayed from its
    record."""
    assert user.id is not None
    after = -1
    if last_event_id and last_event_id.isdigit() and len(last_event_id) <= 18:
        after = int(last_event_id)  # longer names no event (and no Redis stream id)
    live = await _live_runs(request).follow(run_id, user.id, after)
    if live is None:
        stored = await run_reads(session, labs.run_for_user, session, run_id, user.id)
        if stored is None:
            raise NotFound("No such run.")
        frames = _replay(stored, after)
    else:
        frames = _relay(live)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(frames, media_type="text/event-stream", headers=headers)


def _frame(index: int | None, name: str, payload: dict[str, Any]) -> str:
    head = "" if index is None else f"id: {index}\n"  # no id: the reader keeps its place
    return f"{head}event: {name}\ndata: {json.dumps(payload)}\n\n"


async def _relay(live: Frames) -> AsyncIterator[str]:
    async with contextlib.aclosing(live):  # a reader that hangs up frees it
        async for index, name, payload in live:
            yield _frame(index, name, payload)


async def _replay(run: LabRun, after: int) -> AsyncIterator[str]:
    events: list[tuple[str, dict[str, Any]]] = []
    result = json.loads(run.result) if run.result else None
    if result is not None:
        for rank in result.get("ranks", []):
            for stream in ("stdout", "stderr"):
                if rank.get(stream):
                    events.append(("output", {"rank": rank["rank"], "stream": stream,
                                              "text": rank[stream]}))  # fmt: skip
        events.append(("result", {**result, "rank_words": status_words.ranks_said(result)}))
    elif run.status == labs.RUNNING:
        events.append(("unavailable", {"message": "This run was cut off; run it again."}))
    if run.checks is not None:
        events.append(("checks", {"checks": json.loads(run.checks), "passed": run.passed}))
    for index, (name, payload) in enumerate(events):
        if index > after:
            yield _frame(index, name, payload)
    yield _frame(len(events), "end", {})


@router.post("/labs/runs/{run_id}/stop", dependencies=[CsrfDep])
async def stop_run(request: Request, run_id: RowId, user: CurrentUser) -> Response:
    """Stop a run, from whichever process: its ranks are killed at once."""
    assert user.id is not None
    outcome = await _live_runs(request).stop(run_id, user.id)
    if outcome is StopOutcome.UNKNOWN:
        raise NotFound("No run of yours is going with that id.")
    if outcome is StopOutcome.ENDED:
        raise Conflict("That run has already ended.")
    return JSONResponse({"stopped": True})


@router.post("/labs/{lab_id}/steps/{step_id}/questions/{question_id}/answer",
             dependencies=[CsrfDep])  # fmt: skip
def answer_question(
    lab_id: SlugId,
    step_id: SlugId,
    question_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    choice: Annotated[list[str] | None, Form()] = None,
) -> Response:
    """Answer one of the step's questions (as many tries as needed)."""
    assert user.id is not None
    loaded, version = _learners_lab(catalog, session, user.id, lab_id)
    _index, step = _step(loaded, step_id)
    question = next((q for q in step.questions if q.id == question_id), None)
    if question is None:
        raise NotFound(f"No question {question_id!r} in this step.")
    answer = rules.parse_answer(question, choice or [], _question_seed(settings, lab_id, user.id))
    if answer is None:
        raise BadRequest(rules.Refusal.INVALID.value)
    topic = catalog.topic_of_lab(lab_id)
    correct = rules.is_correct(question, answer)
    labs.answer_question(
        session, user.id, topic.id if topic else loaded.lab.topic, lab_id, step, question_id,
        answer, correct, now, version,
    )  # fmt: skip
    verdict = "right" if correct else "wrong"
    return _redirect(f"/labs/{lab_id}/steps/{step_id}?q={question_id}&was={verdict}#questions")

"""The lesson page: read a section, predict what an example prints, then watch it run across
real ranks; a short check at the end completes the lesson. Anyone may read; the first
prediction of a visitor signs them in as a guest (one click, as practice does)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from app import reads
from app.challenges.catalog import Catalog, TopicView
from app.challenges.loader import LoadedTopic
from app.db import end_read, run_reads, run_writes
from app.deps import (
    CatalogDep,
    CsrfDep,
    CurrentUser,
    ExecutorDep,
    NowDep,
    OptionalUser,
    SessionDep,
    SettingsDep,
    SlugId,
    client_address,
    learner_or_guest,
    signed_in,
)
from app.errors import BadRequest, Conflict, NotFound
from app.kinds import order
from app.lessons import rules, view
from app.lessons import service as lessons
from app.lessons.models import CHECK, example_step
from app.lessons.schema import Example, Lesson
from app.progress import service as progress
from app.runs import service as runs

router = APIRouter()
ChoiceField = Annotated[list[str] | None, Form()]


def _lesson(catalog: Catalog, topic_id: str) -> tuple[TopicView, LoadedTopic, Lesson]:
    topic = catalog.topic(topic_id)
    loaded = topic.loaded_topic if topic is not None else None
    if topic is None or loaded is None or loaded.topic.lesson is None:
        raise NotFound(f"Topic {topic_id!r} has no lesson yet.")
    return topic, loaded, loaded.topic.lesson


def _example(lesson: Lesson, example_id: str) -> Example:
    example = lesson.example(example_id)
    if example is None:
        raise NotFound(f"The lesson has no example {example_id!r}.")
    return example


def _seed(secret: str, user_id: int | None, topic_id: str, what: str) -> str:
    """The order seed of a prediction's or the check's options: per learner, so a reload shows
    the same order."""
    return order.seed(secret, "lesson", user_id, topic_id, what)


def _check_seed(secret: str, user_id: int | None, topic_id: str, tries: rules.CheckTries) -> str:
    """The order seed of the check's options for the learner's next try: each try shuffles
    anew, so an option's place says nothing about the last try."""
    return _seed(secret, user_id, topic_id, CHECK if not tries.tries else f"{CHECK}:{tries.tries}")


def _draw_seed(secret: str, user_id: int | None, topic_id: str, tries: rules.CheckTries) -> str:
    """The seed of the questions the learner's next try asks (app.lessons.rules.draw_check)."""
    return _seed(secret, user_id, topic_id, f"{CHECK}-draw:{tries.tries}")


def _url(topic_id: str) -> str:
    return f"/topics/{topic_id}/lesson"


@router.get("/topics/{topic_id}/lesson", response_class=HTMLResponse)
async def lesson_page(
    request: Request,
    topic_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    run: Annotated[str | None, Query(max_length=100, description="An example to run.")] = None,
) -> Response:
    """The lesson: its sections, each example's prediction (or the run once predicted), the
    check. `run` names an example just predicted: its run starts as the page opens."""
    topic, loaded, lesson = _lesson(catalog, topic_id)
    user_id = user.id if user is not None else None
    rows = {}
    if user_id is not None:
        rows = await run_reads(session, lessons.steps, session, user_id, topic.id)
    secret = settings.secret_key
    examples = {
        example.id: view.example_view(
            example,
            loaded.lesson_code[example.id],
            rows.get(example_step(example.id)),
            _seed(secret, user_id, topic.id, example.id),
        )
        for _section, example in lesson.examples()
    }
    check_row = rows.get(CHECK)
    tries = view.check_tries(lesson, check_row.answer if check_row is not None else None)
    check_passed = check_row is not None and check_row.correct
    questions = view.drawn(lesson, tries, _draw_seed(secret, user_id, topic.id, tries))
    next_step = None
    if user_id is not None and check_passed:
        # The path's one next step, as home shows it (not this topic's own next mode).
        engine = request.app.state.engine
        next_step = await reads.read(engine, progress.next_step_of, catalog, user_id, now)
    context: dict[str, Any] = {
        "topic": topic,
        "lesson": lesson,
        "examples": examples,
        "check": view.check_form(questions, _check_seed(secret, user_id, topic.id, tries)),
        "last_try": _with_beliefs(catalog, view.last_try(lesson, tries, check_passed, questions)),
        "check_passed": check_passed,
        "next_step": next_step,
        "completed": check_row is not None and check_row.completed_at is not None,
        "runs_available": await request.app.state.executor_health.health(now) is not None,
        "run": run,
    }
    return request.app.state.templates.TemplateResponse(request, "lesson.html", context)


def _with_beliefs(catalog: Catalog, shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last try's feedback with, for each wrong pick whose option stands for a catalogued
    misconception, the belief and what corrects it (as the results page names them)."""
    for one in shown:
        one["beliefs"] = {}
        for option in one["picked"] if not one["right"] else []:
            entry = catalog.misconceptions.get(option.misconception or "")
            if entry is not None:
                label = catalog.correction_label(entry)
                one["beliefs"][option.id] = (entry.belief, entry.corrected_by.href, label)
    return shown


@router.post("/topics/{topic_id}/lesson/examples/{example_id}/predict", dependencies=[CsrfDep])
def predict(
    request: Request,
    topic_id: SlugId,
    example_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
    now: NowDep,
    choice: ChoiceField = None,
    output: Annotated[str | None, Form(max_length=4000)] = None,
) -> Response:
    """Record the learner's prediction (before any run of it is shown); then show the run: the
    example's panel for htmx, else the lesson page at the example."""
    topic, loaded, lesson = _lesson(catalog, topic_id)
    example = _example(lesson, example_id)
    # Read with the seed the page was shown with: a visitor's, before they become a guest.
    seed = _seed(settings.secret_key, user.id if user else None, topic.id, example.id)
    answer = view.read_prediction(example, choice or [], output, seed)
    if answer is None:
        raise BadRequest("Make a prediction first: pick an option or type what the rank prints.")
    user, token = learner_or_guest(request, session, user, settings, now)
    assert user.id is not None
    right = rules.prediction_right(example, answer)
    row = lessons.record_prediction(session, user.id, topic.id, example.id, answer, right, now)
    # No #fragment: a page opened at one skips `autofocus`, which moves focus (and the view)
    # to the verdict of the example just predicted.
    url = f"{_url(topic.id)}?run={example.id}"
    if token is not None and request.headers.get("hx-request") == "true":
        # A new guest has a new CSRF seed: the page's other forms hold stale tokens, so htmx
        # loads the page afresh (the run starts there) instead of swapping in the example.
        response = Response(status_code=204, headers={"HX-Redirect": url})
        return signed_in(request, response, token, settings)
    if request.headers.get("hx-request") != "true":
        return signed_in(request, RedirectResponse(url, status_code=303), token, settings)
    seed = _seed(settings.secret_key, user.id, topic.id, example.id)
    context = {
        "topic": topic,
        "e": view.example_view(example, loaded.lesson_code[example.id], row, seed),
        "runs_available": runs.available(executor),
        "autostart": True,
    }
    return request.app.state.templates.TemplateResponse(request, "_lesson_example.html", context)


@router.get("/topics/{topic_id}/lesson/examples/{example_id}/run")
def run_example(
    request: Request,
    topic_id: SlugId,
    example_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    executor: ExecutorDep,
) -> StreamingResponse:
    """Stream each rank's output (SSE) once the learner has recorded a prediction (409 while
    the learner has a run going, 429 over their rate)."""
    topic, loaded, lesson = _lesson(catalog, topic_id)
    example = _example(lesson, example_id)
    assert user.id is not None
    if lessons.prediction(session, user.id, topic.id, example.id) is None:
        raise Conflict("Predict first: the run shows the answer.")
    order = runs.run_request(example, loaded.lesson_code[example.id])
    turn = runs.claim_turn(request, user, client_address(request))  # 409/429/503 first
    end_read(session)  # the run streams for seconds: hold no transaction meanwhile
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(
        runs.turn_events(executor, order, turn), media_type="text/event-stream", headers=headers
    )


@router.post("/topics/{topic_id}/lesson/check", dependencies=[CsrfDep])
async def check(
    request: Request,
    topic_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
) -> Response:
    """Judge a try at the check; passing it completes the lesson. The page then says why each
    wrong pick is wrong and where to re-read, and the next try draws its questions afresh."""
    topic, _loaded, lesson = _lesson(catalog, topic_id)
    form = await request.form()
    # Judge the questions and order the page showed: a visitor's, before they become a guest.
    user_id = user.id if user is not None else None
    row = None
    if user_id is not None:
        row = await run_reads(session, lessons.check_row, session, user_id, topic.id)
    tries = view.check_tries(lesson, row.answer if row is not None else None)
    secret = settings.secret_key
    questions = view.drawn(lesson, tries, _draw_seed(secret, user_id, topic.id, tries))
    values = {q.id: [str(v) for v in form.getlist(q.id)] for q in questions}
    seed = _check_seed(secret, user_id, topic.id, tries)
    answers = view.check_results(questions, values, seed)
    if answers is None:
        raise BadRequest("Answer every question of the check.")
    learner, token = await run_writes(
        session, learner_or_guest, request, session, user, settings, now
    )
    assert learner.id is not None
    passed = view.passed(questions, answers)
    asked = [question.id for question in questions]
    stored = tries.after(asked, answers, view.wrong(questions, answers)).dumps()
    await run_writes(
        session, lessons.record_check, session, learner.id, topic.id, stored, passed, now
    )
    response = RedirectResponse(f"{_url(topic.id)}#check", status_code=303)
    return signed_in(request, response, token, settings)

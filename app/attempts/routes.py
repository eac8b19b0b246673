"""The timed challenge: start, question pages, answers, hints, time-outs, results."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from pydantic import Field, TypeAdapter
from sqlmodel import Session
from starlette.datastructures import FormData

from app import reads, writes
from app.accounts import service as accounts
from app.accounts.models import User
from app.attempts import arrival, rules, sightings
from app.attempts import service as attempts
from app.attempts.models import ItemAttempt, SetAttempt
from app.challenges.catalog import Catalog
from app.challenges.schema import EXECUTABLE_KINDS
from app.classes import service as classes
from app.config import Settings
from app.db import end_read, run_reads, write_session
from app.deps import (
    SESSION_COOKIE,
    AskedQuestion,
    CatalogDep,
    CsrfDep,
    CurrentUser,
    NowDep,
    Page,
    QuestionDep,
    RowId,
    SessionDep,
    SettingsDep,
    SlugId,
    ask_question,
    clock_of,
    close_session,
    count_new_guest,
    form_fields,
    form_route,
    page_route,
    signed_in,
)
from app.errors import Busy, Conflict, NotFound
from app.modes import service as modes
from app.progress import service as progress
from app.runs import service as runs
from app.verification import records

router = APIRouter()
T = TypeVar("T")
# An answer's fields (app.deps.form_fields): the options chosen; a fresh random token rendered
# with each answer form (see attempts.submit), 16 to 64 URL-safe characters, which a retry of
# the same submission sends again; when the first copy of a resent answer arrived, signed
# (app.attempts.arrival).
CHOICE = TypeAdapter(list[str])
SUBMISSION_TOKEN = TypeAdapter(
    Annotated[str, Field(min_length=16, max_length=64, pattern="^[A-Za-z0-9_-]+$")]
)
FIRST_SENT = TypeAdapter(Annotated[str, Field(max_length=100)])
SLUG_ID = TypeAdapter(SlugId)


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _question_context(
    catalog: Catalog, attempt: SetAttempt, row: ItemAttempt, settings: Settings, now: Any
) -> dict[str, Any]:
    grace_s = settings.grace_seconds
    item = attempts.catalog_item(catalog, attempt, row)
    view = rules.public_question(
        item,
        row.status,
        row.last_answer,
        row.attempts_used,
        row.attempts_allowed,
        row.hint_shown_at is not None,
        rules.attempt_seed(settings.secret_key, attempt.id, attempt.user_id),
    )
    loaded = catalog.get(attempt.set_id, attempt.content_version)
    clock = attempts.clock(row, grace_s) if row.started_at else None
    deadline = clock.deadline if clock else None
    return {
        "attempt": attempt,
        "row": row,
        "item": item,
        "loaded": loaded,
        "unproven": _unproven(catalog, attempt, loaded, item.id),
        "q": view,
        "code": sightings.shown_code(loaded, item, row.variant_key) if loaded else None,
        "position": row.position,
        "count": len(attempt.item_id_list),
        "deadline_ms": int(deadline.timestamp() * 1000) if deadline else None,
        "server_now_ms": int(now.timestamp() * 1000),
        "grace_ms": int(grace_s * 1000),
        "seconds_left": clock.seconds_left(now) if clock else None,
        # Names this rendering's answer: sent twice (a retry), it is judged and counted once.
        "submission": secrets.token_urlsafe(16),
    }


@form_route(router, "/sets/{set_id}/start", login=False, set_id=SLUG_ID)
async def start(page: Page, form: FormData, set_id: str) -> Response:
    """Start the set (or resume the unfinished attempt) and go to its current question.

    A visitor who is not signed in starts as a guest with the same click (one click, not a
    guest start that only reloads the page and then a second Start). The write waits its turn
    in the queue (app.writes); the first question's clock starts when it runs, not before."""
    request, catalog, settings, now, user = (
        page.request,
        page.catalog,
        page.settings,
        page.now,
        page.user,
    )
    version = catalog.version_of("set", set_id)  # the attempt keeps this version to the end
    loaded = catalog.get(set_id, version)
    if loaded is None:
        raise NotFound(f"No challenge set {set_id!r}.")
    clock = clock_of(request)
    if user is None:
        count_new_guest(request)  # before its write: a refused guest costs no turn
    session = write_session(page.engine)

    def begin() -> tuple[SetAttempt, str | None]:
        learner, token = user, None
        if learner is None:  # a new guest, committed with its attempt: one transaction
            old_token = request.cookies.get(SESSION_COOKIE)
            learner, token = accounts.write_guest(session, old_token, now, settings.session_days)
        assert learner.id is not None
        multiplier = learner.time_accommodation.multiplier
        opened = max(now, clock())  # the clock starts now, not when the request came
        if token is None:  # a class's assignment: its window, attempt limit and extension
            multiplier = classes.start_check(session, learner.id, set_id, opened, multiplier)
        found = attempts.start_or_resume(
            session,
            learner.id,
            loaded.challenge_set,
            opened,
            multiplier,
            version,
            new_user=token is not None,
            offer=sightings.offer_for(settings, loaded),
        )
        return found, token

    try:
        attempt, token = await _write(request, session, begin)
    finally:
        await close_session(session)
    return signed_in(request, _redirect(f"/attempts/{attempt.id}"), token, settings)


async def _write(request: Request, session: Session, work: Callable[..., T], *args: Any) -> T:
    """Run a request's writes in their turn (app.writes): 503 if it would not come in time."""
    queue: writes.WriteQueue = request.app.state.writes
    waited_s = getattr(request.state, "admission_wait_s", 0.0)  # its bound counts from arrival
    return await queue.run(session, work, *args, waited_s=waited_s)


@page_route(router, "/attempts/{attempt_id}", checked_ids=True)
async def resume(page: Page, attempt_id: int) -> Response:
    """Send the learner to where the attempt stands: its current question or its results."""
    user, catalog, engine = page.signed_in(), page.catalog, page.engine
    assert user.id is not None
    # Every question's Next comes through here: one compiled read, no session unless it writes.
    attempt = await reads.read(engine, attempts.attempt_of_user, attempt_id, user.id)
    if _on_removed_item(catalog, attempt):  # an edit removed it: close it and move on (writes)
        step = attempts.skip_removed_items
        settings, now = page.settings, page.now
        with write_session(engine) as session:
            session.add(attempt)  # read detached: the service changes it in this session
            attempt = await _write(
                page.request,
                session,
                _advance,
                session,
                attempt,
                catalog,
                settings,
                now,
                user,
                step,
            )
    return _redirect(_where_it_stands(attempt))


def _unproven(catalog: Catalog, attempt: SetAttempt, loaded: Any, item_id: str) -> bool:
    """Whether this question is marked unproven: its set's version was published unproven
    and this item's key (or proof) is among what was not proven, not merely any of the set's."""
    if not catalog.is_unproven("set", attempt.set_id, attempt.content_version):
        return False
    if catalog.publisher is None or loaded is None:
        return True  # nothing to tell the items apart by: say it of every question
    return item_id in catalog.publisher.unproven_items(loaded)


def _where_it_stands(attempt: SetAttempt) -> str:
    """The page of where the attempt stands: its results, or its current question."""
    if attempt.finished:
        return f"/attempts/{attempt.id}/results"
    return f"/attempts/{attempt.id}/q/{attempt.current_position + 1}"


def _on_removed_item(catalog: Catalog, attempt: SetAttempt) -> bool:
    """Whether the attempt stands on a question its set no longer has (skip_removed_items)."""
    loaded = catalog.get(attempt.set_id, attempt.content_version)
    if attempt.finished or loaded is None:
        return False
    ids = attempt.item_id_list
    position = attempt.current_position
    return position >= len(ids) or loaded.challenge_set.item(ids[position]) is None


@page_route(router, "/attempts/{attempt_id}/q/{number}")
async def question(page: Page, attempt_id: int, number: int) -> Response:
    """Show a question: countdown, attempts left, hint on demand, options; feedback once closed."""
    user = page.signed_in()
    assert user.id is not None
    catalog, now, engine = page.catalog, page.now, page.engine
    grace_s = page.settings.grace_seconds
    found = await reads.read(engine, _question_reads, catalog, attempt_id, number, user.id)
    attempt, row, verified = found
    if row.status is rules.ItemStatus.PENDING:
        return _redirect(f"/attempts/{attempt.id}")
    if attempts.expired(row, grace_s, now):  # the page records the time-out: a write
        with write_session(engine) as session:
            close = attempts.close_if_expired
            await _write(page.request, session, close, session, row, grace_s, now)
        if row.status.closed:  # closed just now: its key is shown, and where it was proven
            verified = await reads.read(engine, _proof_line, catalog, attempt, row)
    context = _question_context(catalog, attempt, row, page.settings, now)
    context["verified"] = verified
    item = context["item"]
    if isinstance(item, EXECUTABLE_KINDS) and row.status.closed:
        health = await page.request.app.state.executor_health.health(now)
        context["run"] = runs.panel(health, item)
    return page.render("question.html", context)


def _question_reads(
    reader: reads.Reader, catalog: Catalog, attempt_id: int, number: int, user_id: int
) -> tuple[SetAttempt, ItemAttempt, str | None]:
    """The question, and where its key was proven if it is shown (closed): one connection."""
    attempt, row = attempts.question_for_user(reader, attempt_id, number, user_id)
    verified = _proof_line(reader, catalog, attempt, row) if row.status.closed else None
    return attempt, row, verified


def _proof_line(
    reader: reads.Reader, catalog: Catalog, attempt: SetAttempt, row: ItemAttempt
) -> str | None:
    """The closed question's "Verified on" line (records.proof_line_of), or None."""
    loaded = catalog.get(attempt.set_id, attempt.content_version)
    found = catalog.item(attempt.set_id, row.item_id, attempt.content_version)
    if loaded is None or found is None:
        return None  # no longer in the set: the page says so (catalog_item)
    return records.proof_line_of(reader, loaded, found[1])


@router.get("/api/attempts/{attempt_id}/q/{number}")
def question_json(
    asked: QuestionDep,
    session: SessionDep,
    catalog: CatalogDep,
    settings: SettingsDep,
    now: NowDep,
):
    """The question as JSON (the key only once it is closed) with the server's deadline."""
    attempt, row, number = asked.attempt, asked.row, asked.number
    if row.status is rules.ItemStatus.PENDING:
        raise NotFound("This question is not open yet.")
    attempts.close_if_expired(session, row, settings.grace_seconds, now)
    context = _question_context(catalog, attempt, row, settings, now)
    end_read(session)  # its connection goes back before the response is sent
    return JSONResponse(
        {
            "question": context["q"],
            "position": number,
            "count": context["count"],
            "deadline_ms": context["deadline_ms"],
            "server_now_ms": context["server_now_ms"],
            "seconds_left": context["seconds_left"],
        }
    )


@form_route(router, "/attempts/{attempt_id}/q/{number}/answer")
async def answer(page: Page, form: FormData, attempt_id: int, number: int) -> Response:
    """Judge an answer against the time it reached the server; the server refuses it when
    late or when no attempt is left (409). The same `submission` token sent again gets the
    first outcome and counts once (a retry after a time-out or a busy page). An answer the
    busy page sends again is judged at the time its first copy arrived (app.attempts.arrival)."""
    request, catalog, settings, now = page.request, page.catalog, page.settings, page.now
    session = write_session(page.engine)
    try:
        asked = await ask_question(page, attempt_id, number)
        fields = form_fields(
            form, choice=CHOICE, submission=SUBMISSION_TOKEN, first_sent=FIRST_SENT
        )
        judgement = await _judge(page, session, asked, fields)
    finally:
        await close_session(session)
    attempt, row = asked.attempt, asked.row
    if "application/json" in request.headers.get("accept", ""):
        context = _question_context(catalog, attempt, row, settings, now)
        return JSONResponse(
            {
                "correct": judgement.correct,
                "status": judgement.status.value,
                "attempts_left": judgement.attempts_left,
                "replayed": judgement.replayed,
                "question": context["q"],
            }
        )
    return _redirect(f"/attempts/{attempt.id}/q/{asked.number}")


async def _judge(
    page: Page, session: Session, asked: AskedQuestion, fields: dict[str, Any]
) -> attempts.Judgement:
    """Judge the answer in its turn in the write queue (and feed a closed question's outcome
    to the review queue); Busy, stamped with its arrival, if its turn would not come in time."""
    attempt, row, item, now = asked.attempt, asked.row, asked.item, page.now
    choice, submission = fields["choice"] or [], fields["submission"]
    grace_s, secret, path = (
        page.settings.grace_seconds,
        page.settings.secret_key,
        page.request.url.path,
    )
    when = arrival.judged_at(secret, path, submission, choice, fields["first_sent"], now)
    seed = rules.attempt_seed(secret, attempt.id, attempt.user_id)  # the one it was shown with

    def feed_review(judgement: attempts.Judgement) -> None:
        if judgement.status.closed:  # a miss enters the review queue: stored with the answer
            _feed_review(session, page.catalog, attempt, row, judgement.correct, now)

    def judge() -> attempts.Judgement:
        return attempts.submit(
            session, row, item, choice, grace_s, when, submission, seed, on_judged=feed_review
        )

    try:
        return await _write(page.request, session, judge)
    except Busy as busy:  # nothing stored: the busy page resends it, stamped with `when`
        if submission:
            busy.resend[arrival.FIELD] = arrival.stamp(secret, path, submission, choice, when)
        raise


@router.post("/attempts/{attempt_id}/q/{number}/hint", dependencies=[CsrfDep])
def hint(request: Request, asked: QuestionDep, session: SessionDep, now: NowDep):
    """Reveal the hint (recorded: hint use is part of item statistics)."""
    attempt, row, number, item = asked.attempt, asked.row, asked.number, asked.item
    if item.hint is None:
        raise NotFound("This question has no hint.")
    if row.status is not rules.ItemStatus.OPEN:
        raise Conflict("Hints are for open questions.")
    attempts.show_hint(session, row, now)
    if request.headers.get("hx-request") == "true":
        return request.app.state.templates.TemplateResponse(
            request, "_hint.html", {"hint": item.hint}
        )
    return _redirect(f"/attempts/{attempt.id}/q/{number}")


@router.post("/attempts/{attempt_id}/q/{number}/expire", dependencies=[CsrfDep])
def expire(
    asked: QuestionDep,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    catalog: CatalogDep,
):
    """The browser's timer reached zero: record the time-out (if the server agrees) and show the
    question closed, saying time is up, with its key and explanation; Next moves on."""
    attempt, row, number = asked.attempt, asked.row, asked.number
    if row.position != attempt.current_position:
        return _redirect(f"/attempts/{attempt.id}")
    # The page waits out the grace before reporting, so an answer sent at 0:00 still counts.
    was_open = row.status is rules.ItemStatus.OPEN
    if attempts.close_if_expired(session, row, settings.grace_seconds, now) and was_open:
        _feed_review(session, catalog, attempt, row, False, now)
    return _redirect(f"/attempts/{attempt.id}/q/{number}")


def _feed_review(
    session: Session,
    catalog: Catalog,
    attempt: SetAttempt,
    row: ItemAttempt,
    correct: bool,
    now: datetime,
) -> None:
    """Feed a closed question to the learner's review queue (a time-out is a miss)."""
    entry = catalog.entry(attempt.set_id, row.item_id)
    if entry is not None:
        hinted = row.hint_shown_at is not None
        modes.feed_review(session, attempt.user_id, entry, correct, hinted, "timed", now)


def _advance(
    session: Session,
    attempt: SetAttempt,
    catalog: Catalog,
    settings: Settings,
    now: datetime,
    user: User,
    step: Callable[..., SetAttempt] = attempts.advance,
    **options: Any,
) -> SetAttempt:
    """Move on (or skip removed questions) with the learner's own time accommodation."""
    loaded = catalog.get(attempt.set_id, attempt.content_version)
    return step(
        session,
        attempt,
        loaded.challenge_set if loaded else None,
        settings.grace_seconds,
        now,
        user.time_accommodation.multiplier,
        **options,
    )


@form_route(router, "/attempts/{attempt_id}/next")
async def next_question(page: Page, form: FormData, attempt_id: int) -> Response:
    """Open the next question (its clock starts when this write runs) or finish the attempt."""
    user = page.signed_in()
    assert user.id is not None
    user_id, clock, now = user.id, clock_of(page.request), page.now
    catalog, settings = page.catalog, page.settings
    # Read before its turn (a 404 takes no turn): the move is conditional on where the attempt
    # stood, so a second tab's move in between leaves this one moving nothing.
    read = await reads.read(page.engine, attempts.attempt_of_user, attempt_id, user_id)
    session = write_session(page.engine)

    def move_on() -> SetAttempt:
        session.add(read)  # read detached: the service changes it in this session
        # The clock starts when this write runs: time queued is not taken off the countdown.
        return _advance(session, read, catalog, settings, now, user, opened_at=max(now, clock()))

    try:
        attempt = await _write(page.request, session, move_on)
    finally:
        await close_session(session)
    if _on_removed_item(catalog, attempt):  # an edit removed it: resume skips it (writes)
        return _redirect(f"/attempts/{attempt.id}")
    return _redirect(_where_it_stands(attempt))  # straight there: a redirect fewer a question


def _shown_or_none(item: Any, key: str) -> Any:
    """The variant a question showed, or None where the item no longer has it."""
    try:
        return sightings.shown_item(item, key)
    except KeyError:
        return None


@router.get("/attempts/{attempt_id}/results", response_class=HTMLResponse)
async def results(
    request: Request,
    attempt_id: RowId,
    user: CurrentUser,
    session: SessionDep,
    catalog: CatalogDep,
    settings: SettingsDep,
    now: NowDep,
) -> Response:
    """Score, first tries, time used, a review of every question, the badge if earned, and the
    path's next step."""
    assert user.id is not None
    attempt, rows, firsts = await run_reads(
        session, attempts.attempt_for_results, session, attempt_id, user.id
    )
    if not attempt.finished:
        return _redirect(f"/attempts/{attempt.id}")
    assert attempt.id is not None
    connection = session.connection()
    elsewhere = sightings.seen_elsewhere(connection, attempt.user_id, attempt.set_id, attempt.id)
    reviews = []
    picked: dict[str, list[tuple[int, str]]] = {}  # misconception id -> (position, title)
    for row in rows:
        found = catalog.item(attempt.set_id, row.item_id, attempt.content_version)
        view = None
        shown = _shown_or_none(found[1], row.variant_key) if found is not None else None
        if shown is not None:
            assert row.id is not None
            for name in rules.first_pick_misconceptions(shown, firsts.get(row.id)):
                picked.setdefault(name, []).append((row.position + 1, shown.title))
            view = rules.public_question(
                shown,
                row.status,
                row.last_answer,
                row.attempts_used,
                row.attempts_allowed,
                row.hint_shown_at is not None,
                rules.attempt_seed(settings.secret_key, attempt.id, attempt.user_id),
            )
        used = (
            (row.closed_at - row.started_at).total_seconds()
            if (row.closed_at and row.started_at)
            else None
        )
        reviews.append(
            {
                "row": row,
                "q": view,
                "seconds": used,
                "answer": rules.shown_answer(view) if view else row.last_answer,
                "key": rules.shown_key(view) if view else None,
                # Seen before (another attempt, practice, review, a quiz): not for the badge.
                "counted": (row.item_id, row.variant_key) not in elsewhere,
            }
        )
    loaded = catalog.get(attempt.set_id, attempt.content_version)
    assert attempt.finished_at is not None
    # The path's one next step, as home shows it (short of the badge, it may be this set).
    engine = request.app.state.engine
    suggestion = await reads.read(engine, progress.next_step_of, catalog, user.id, now)
    return request.app.state.templates.TemplateResponse(
        request,
        "results.html",
        {
            "attempt": attempt,
            "reviews": reviews,
            "badge": loaded.challenge_set.badge if loaded else None,
            "elapsed": (attempt.finished_at - attempt.started_at).total_seconds(),
            "score": rules.score((row.status, row.attempts_used) for row in rows),
            "suggestion": suggestion,
            "misconceptions": _shown_misconceptions(catalog, picked),
        },
    )


def _shown_misconceptions(
    catalog: Catalog, picked: dict[str, list[tuple[int, str]]]
) -> list[dict[str, object]]:
    """The misconceptions the learner's first picks showed, each with its questions and what
    corrects it (an id the catalogue no longer has is left out: there is nothing to link)."""
    shown: list[dict[str, object]] = []
    for name, questions in picked.items():
        entry = catalog.misconceptions.get(name)
        if entry is not None:
            shown.append(
                {
                    "id": name,
                    "belief": entry.belief,
                    "href": entry.corrected_by.href,
                    "label": catalog.correction_label(entry),
                    "questions": questions,
                }
            )
    return shown

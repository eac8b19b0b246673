"""LTI 1.3 endpoints: login initiation, the launch, arrival, the tool's JWKS, and the class
page's roster and grade actions. The first three are posted to across sites by the LMS: they
take no CSRF token (the state, nonce and signed id_token do that work)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any, cast
from urllib.parse import urlencode

import httpx
from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, RedirectResponse

from app.classes import service as classes
from app.db import read_session, utcnow
from app.deps import (
    SESSION_COOKIE,
    CsrfDep,
    NowDep,
    RowId,
    SessionDep,
    SettingsDep,
    StaffUser,
    get_now,
    sign_in,
)
from app.errors import BadRequest
from app.lti import grades, keys, service

log = logging.getLogger("ranklab.lti")
STATE_COOKIE = "ranklab_lti_"  # + the launch's state: the browser that began it
TIMEOUT = httpx.Timeout(10.0)


def _fetch_jwks(url: str) -> dict[str, Any]:
    try:
        response = httpx.get(url, timeout=TIMEOUT)
        response.raise_for_status()
        return cast(dict[str, Any], response.json())
    except (httpx.HTTPError, ValueError) as error:
        raise BadRequest(f"The platform's JWKS at {url} could not be fetched.") from error


platform_keys = keys.PlatformKeys(_fetch_jwks)


def _clock(app: FastAPI) -> Callable[[], datetime]:
    override = app.dependency_overrides.get(get_now)
    if override is None or inspect.iscoroutinefunction(override):
        return utcnow
    return cast(Callable[[], datetime], override)


def send_round(app: FastAPI) -> grades.Sent:
    """Send what the outbox owes now (a worker thread's job)."""
    # A reader: looking for owed rows takes no write lock (most rounds find none); sending one
    # begins a writer (begin_write).
    session = read_session(app.state.engine)
    with session, httpx.Client(timeout=TIMEOUT) as client:
        return grades.send_due(session, client, _clock(app)())


@contextlib.asynccontextmanager
async def _sender(app: FastAPI) -> AsyncIterator[None]:
    """Send owed scores every lti_send_interval_s while the app runs."""
    interval = app.state.settings.lti_send_interval_s

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await run_in_threadpool(send_round, app)
            except Exception:  # the next round tries again: rows are never lost
                log.exception("sending LTI scores failed")

    task = asyncio.create_task(loop()) if interval > 0 else None
    yield
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


router = APIRouter(lifespan=_sender)


async def _login_fields(request: Request) -> dict[str, str]:
    fields: dict[str, Any] = dict(request.query_params)
    if request.method == "POST":
        fields.update(await request.form())
    return {key: value for key, value in fields.items() if isinstance(value, str)}


@router.api_route("/lti/login", methods=["GET", "POST"], include_in_schema=False)
async def login(request: Request, session: SessionDep, now: NowDep, settings: SettingsDep):
    """OIDC login initiation: send the browser to the platform's auth endpoint with a fresh
    state (also kept in a cookie: the launch must come back to this browser) and nonce."""
    fields = await _login_fields(request)
    for required in ("iss", "login_hint", "target_link_uri"):
        if not fields.get(required):
            raise BadRequest(f"The login initiation lacks {required}.")
    platform = await run_in_threadpool(
        service.platform_for, session, fields["iss"], fields.get("client_id")
    )
    row = await run_in_threadpool(service.begin_login, session, platform, now)
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": platform.client_id,
        "redirect_uri": str(request.url_for("lti_launch")),
        "login_hint": fields["login_hint"],
        "state": row.state,
        "nonce": row.nonce,
    }
    if fields.get("lti_message_hint"):
        query["lti_message_hint"] = fields["lti_message_hint"]
    response = RedirectResponse(f"{platform.auth_login_url}?{urlencode(query)}", status_code=302)
    response.set_cookie(
        STATE_COOKIE + row.state, "1", max_age=600, path="/lti", httponly=True,
        samesite="lax", secure=settings.cookie_secure,
    )  # fmt: skip
    return response


def _verify(app: FastAPI, state: str, id_token: str, now: datetime) -> None:
    # A reader until the token checks: no write lock held while the platform's keys are fetched.
    with read_session(app.state.engine) as session:
        service.verify_launch(session, state, id_token, platform_keys, now)


@router.post("/lti/launch", name="lti_launch", include_in_schema=False)
async def launch(request: Request, now: NowDep):
    """The platform's form post of the id_token: verify it, then send the browser on to
    arrive (a same-site step, where its state cookie comes along)."""
    form = await request.form()
    id_token, state = form.get("id_token"), form.get("state")
    if not isinstance(id_token, str) or not isinstance(state, str):
        raise BadRequest("The launch lacks its id_token or state.")
    await run_in_threadpool(_verify, request.app, state, id_token, now)
    return RedirectResponse(f"/lti/enter?{urlencode({'state': state})}", status_code=303)


@router.get("/lti/enter", include_in_schema=False)
def enter(request: Request, session: SessionDep, now: NowDep, settings: SettingsDep, state: str):
    """Sign the launched person in (in the browser that began the launch) and take them to the
    set or topic the link names."""
    if request.cookies.get(STATE_COOKIE + state) != "1":
        raise BadRequest(
            "This launch began in another browser (or cookies are off): launch again from the "
            "course, in a new window."
        )
    old_token = request.cookies.get(SESSION_COOKIE)
    token, where = service.enter(session, state, old_token, settings.session_days, now)
    response = RedirectResponse(where, status_code=303)
    response.delete_cookie(STATE_COOKIE + state, path="/lti")
    return sign_in(request, response, token, settings)


@router.get("/lti/jwks.json", include_in_schema=False)
def jwks(session: SessionDep):
    """The tool's public keys: platforms check its signed requests with them."""
    return JSONResponse(keys.public_jwks(service.tool_keys(session)))


@router.post("/staff/classes/{class_id}/lti/roster", dependencies=[CsrfDep])
def sync_roster(request: Request, class_id: RowId, staff: StaffUser, now: NowDep):
    """Bring the LMS course's roster into the class."""
    # A reader while the LMS is asked (network); the service begins writing after.
    with read_session(request.app.state.engine) as session, httpx.Client(timeout=TIMEOUT) as client:
        klass = classes.class_for_staff(session, class_id, staff)
        listed = grades.sync_roster(session, klass, client, now)
    return RedirectResponse(f"/staff/classes/{class_id}?lms_roster={listed}", status_code=303)


@router.post("/staff/classes/{class_id}/lti/grades", dependencies=[CsrfDep])
def send_grades(
    request: Request, class_id: RowId, staff: StaffUser, session: SessionDep, now: NowDep
):
    """Send every learner's score for the class's linked assignments to the LMS now."""
    klass = classes.class_for_staff(session, class_id, staff)
    grades.queue_class(session, klass, now)
    done = send_round(request.app)
    query = urlencode({"lms_sent": done.sent, "lms_failed": done.failed})
    return RedirectResponse(f"/staff/classes/{class_id}?{query}", status_code=303)

"""FastAPI dependencies as Annotated aliases: the one place routes get what they need."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Path, Request, Response
from fastapi.concurrency import run_in_threadpool
from sqlmodel import Session

from app.accounts import service as accounts
from app.accounts.models import Role, User
from app.accounts.throttle import Throttle
from app.attempts import service as attempts
from app.attempts.models import ItemAttempt, SetAttempt
from app.challenges.catalog import Catalog
from app.challenges.schema import ItemBase
from app.config import Settings
from app.db import never_waits, read_session, run_reads, utcnow, write_session
from app.errors import Forbidden, LoginRequired
from app.executor_client import ExecutorClient
from app.verification.jobs import VerifyJobs

SESSION_COOKIE = "ranklab_session"
CSRF_COOKIE = "ranklab_csrf"

# Ids and question numbers are INTEGER columns, 32-bit on PostgreSQL (the narrower database): a
# larger number cannot name a row, and the driver would fail on it with a 500. A number outside
# this range names nothing, so the validation handler in app.main answers 404 for it.
MAX_ROW_ID = 2**31 - 1
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="A positive id or 1-based number.")]
# Set and item ids are VARCHAR(100) columns: a longer one can name nothing (a 422 saying why).
SlugId = Annotated[str, Path(max_length=100, description="A set's or item's stable id.")]
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")  # they change nothing (RFC 9110): their sessions read


# Trivial dependencies are `async def`: FastAPI runs a plain `def` in a worker thread, and a
# thread hop for returning an attribute cost more than the work on every request.
async def get_settings(request: Request) -> Settings:
    """Return the app's settings (set by create_app)."""
    settings: Settings = request.app.state.settings
    return settings


async def get_session(request: Request) -> AsyncIterator[Session]:
    """Yield the request's one session: GET and HEAD read, without SQLite's write lock.

    Their transactions are readers (app.db.read_session); a service that writes during a GET
    (recording a time-out) begins a writer first (app.db.begin_write). Other methods change
    things: every transaction of theirs is a writer, holding the write lock from BEGIN.
    """
    engine = request.app.state.engine
    safe = request.method in SAFE_METHODS
    session = read_session(engine) if safe else write_session(engine)
    try:
        yield session
    finally:
        if session.in_transaction() and not never_waits(session):
            await run_in_threadpool(session.close)  # a rollback over the network, or a lock
        else:
            session.close()


async def get_catalog(request: Request) -> Catalog:
    """Return the loaded challenge catalog."""
    catalog: Catalog = request.app.state.catalog
    return catalog


async def get_executor(request: Request) -> ExecutorClient:
    """Return the executor client (tests inject a fake one)."""
    client: ExecutorClient = request.app.state.executor
    return client


async def get_verify_jobs(request: Request) -> VerifyJobs:
    """Return the staff verification jobs (this process's, or every process's on the bus)."""
    registry: VerifyJobs = request.app.state.verify_jobs
    return registry


async def get_throttle(request: Request) -> Throttle:
    """Return the log-in and sign-up attempt counter."""
    throttle: Throttle = request.app.state.throttle
    return throttle


async def get_now() -> datetime:
    """Return the server's clock; tests override this one dependency to move time."""
    return utcnow()


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
ExecutorDep = Annotated[ExecutorClient, Depends(get_executor)]
NowDep = Annotated[datetime, Depends(get_now)]
VerifyJobsDep = Annotated[VerifyJobs, Depends(get_verify_jobs)]
ThrottleDep = Annotated[Throttle, Depends(get_throttle)]


def wants_json(request: Request) -> bool:
    """Whether the client asked for JSON (the API, or an Accept header) rather than a page."""
    return request.url.path.startswith("/api/") or "application/json" in request.headers.get(
        "accept", ""
    )


async def get_optional_user(request: Request, session: SessionDep, now: NowDep) -> User | None:
    """Return the signed-in user (guest or account), or None."""
    token = request.cookies.get(SESSION_COOKIE)
    # No cookie, no query. A worker thread ends its transaction (a POST's holds SQLite's write
    # lock); a GET's lookup on SQLite runs here and its read goes on into the page.
    user = await run_reads(session, accounts.user_for_token, session, token, now) if token else None
    request.state.user = user
    return user


OptionalUser = Annotated[User | None, Depends(get_optional_user)]


async def get_current_user(user: OptionalUser) -> User:
    """Return the signed-in user or refuse (HTML pages redirect to the start page)."""
    if user is None:
        raise LoginRequired()
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]


def require_role(*roles: Role) -> Any:
    """A dependency that lets through only users with one of these roles (guests log in, 403)."""

    async def check(user: CurrentUser) -> User:
        if user.role not in roles:
            raise Forbidden("This page is for " + " and ".join(f"{r.value}s" for r in roles) + ".")
        return user

    return Depends(check)


StaffUser = Annotated[User, require_role(Role.INSTRUCTOR, Role.ADMIN)]
AdminUser = Annotated[User, require_role(Role.ADMIN)]


def use_csrf_seed(request: Request, seed: str) -> None:
    """Make seed this visitor's CSRF seed; the middleware sends the cookie if it is new."""
    request.state.csrf_seed = seed
    # Pages rendered later in this request carry a token for this seed, not the old one.
    request.state.csrf_token = accounts.csrf_token(request.app.state.settings.secret_key, seed)


def renew_csrf_seed(request: Request) -> None:
    """Give the visitor a new CSRF seed: on every privilege change, so an old token is useless."""
    use_csrf_seed(request, accounts.new_csrf_seed())


def sign_in(request: Request, response: Response, token: str, settings: Settings) -> Response:
    """Give the response the new session cookie: a privilege change, so the CSRF seed is new
    too (the caller ended the old session), and nothing a page or cookie held before works."""
    renew_csrf_seed(request)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=settings.session_days * 86400,
        httponly=True,
        samesite="lax",
        secure=settings.cookie_secure,
    )
    return response


def learner_or_guest(
    request: Request, session: Session, user: User | None, settings: Settings, now: datetime
) -> tuple[User, str | None]:
    """The signed-in user, or a new guest for a visitor who acts (one click, no sign-up): then
    also the new session's token, to give the response with `signed_in`."""
    if user is not None:
        return user, None
    guest = accounts.create_guest(session, now)
    token = accounts.replace_session(
        session, request.cookies.get(SESSION_COOKIE), guest, now, settings.session_days
    )
    return guest, token


def signed_in(
    request: Request, response: Response, token: str | None, settings: Settings
) -> Response:
    """The response, signing in the guest `learner_or_guest` made (if it made one)."""
    return response if token is None else sign_in(request, response, token, settings)


async def verify_csrf(request: Request, settings: SettingsDep) -> None:
    """Refuse a state-changing request whose CSRF token does not match the visitor's cookie."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    sent = request.headers.get("x-csrf-token")
    if sent is None:
        content_type = request.headers.get("content-type", "")
        if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
            form = await request.form()
            value = form.get("csrf_token")
            sent = value if isinstance(value, str) else None
    if not accounts.csrf_valid(settings.secret_key, request.cookies.get(CSRF_COOKIE), sent):
        raise Forbidden("The form expired or did not come from this site; reload and try again.")


CsrfDep = Depends(verify_csrf)


@dataclass(frozen=True)
class AskedQuestion:
    """One question of one of the signed-in learner's attempts: what every question route
    starts from (another learner's attempt, or a number it does not have, is a 404)."""

    attempt: SetAttempt
    row: ItemAttempt
    catalog: Catalog

    @property
    def number(self) -> int:
        """The question's 1-based number, as in its URL."""
        return self.row.position + 1

    @property
    def item(self) -> ItemBase:
        """The item as the catalog serves it now (a 404 if it left the set)."""
        return attempts.catalog_item(self.catalog, self.attempt, self.row)


def get_question(
    attempt_id: RowId, number: RowId, user: CurrentUser, session: SessionDep, catalog: CatalogDep
) -> AskedQuestion:
    """Look up /attempts/{attempt_id}/q/{number} for the signed-in learner."""
    assert user.id is not None
    attempt, row = attempts.question_for_user(session, attempt_id, number, user.id)
    return AskedQuestion(attempt, row, catalog)


QuestionDep = Annotated[AskedQuestion, Depends(get_question)]

"""FastAPI dependencies as Annotated aliases: the one place routes get what they need."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from inspect import isawaitable
from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.datastructures import FormData
from starlette.routing import Match, Route
from starlette.types import Scope

from app import reads
from app.accounts import service as accounts
from app.accounts.models import Role, User
from app.accounts.throttle import Throttle
from app.admission import Admission
from app.attempts import service as attempts
from app.attempts.models import ItemAttempt, SetAttempt
from app.challenges.catalog import Catalog
from app.challenges.schema import ItemBase
from app.config import Settings
from app.db import never_waits, read_session, utcnow, write_session
from app.errors import Forbidden, LoginRequired, NotFound, TooManyRequests
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
        await close_session(session)


async def close_session(session: Session) -> None:
    """Close a request's session: on a worker thread if that may wait (a rollback over the
    network, or a lock), on the loop if it cannot."""
    if session.in_transaction() and not never_waits(session):
        await run_in_threadpool(session.close)
    else:
        session.close()


async def get_catalog(request: Request) -> Catalog:
    """Return the loaded challenge catalog, with what any process published (see follow)."""
    catalog: Catalog = request.app.state.catalog
    await _follow(catalog)
    return catalog


async def _follow(catalog: Catalog) -> None:
    """Pick up a version another worker published: a clock read per request, a small query
    every few seconds (off the event loop), a load only after a publication."""
    if catalog.check_due():
        await run_in_threadpool(catalog.follow)


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


def clock_of(request: Request) -> Callable[[], datetime]:
    """The app's clock as a plain function (a test's fake clock, else utcnow): for a write that
    reads the time when it runs, which may be later than its request's `now` (app.writes)."""
    override = request.app.dependency_overrides.get(get_now)
    if override is None or inspect.iscoroutinefunction(override):
        return utcnow
    return cast(Callable[[], datetime], override)


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


async def get_optional_user(request: Request, now: NowDep) -> User | None:
    """Return the signed-in user (guest or account), or None."""
    token = request.cookies.get(SESSION_COOKIE)
    # No cookie, no query. One read on the driver (app.reads): on the event loop for SQLite,
    # on a worker thread for PostgreSQL; the page's own session, if any, is not involved.
    engine = request.app.state.engine
    user = await reads.read(engine, accounts.user_for_token, token, now) if token else None
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


def client_address(request: Request) -> str:
    """The client's address: the peer's, or behind a proxy named in RANKLAB_TRUSTED_PROXIES
    the visitor's from X-Forwarded-For (uvicorn puts it here: app.serving.proxy_options)."""
    return request.client.host if request.client else "unknown"


def count_new_guest(request: Request) -> None:
    """Count a guest about to be made for this client's address; 429 if it is over its limit
    (RANKLAB_GUEST_LIMIT_PER_ADDRESS): one client made ~141 a second."""
    throttle: Throttle = request.app.state.throttle
    refusal = throttle.guest(client_address(request))
    if refusal is not None:
        raise TooManyRequests(refusal.message)


def learner_or_guest(
    request: Request, session: Session, user: User | None, settings: Settings, now: datetime
) -> tuple[User, str | None]:
    """The signed-in user, or a new guest for a visitor who acts (one click, no sign-up): then
    also the new session's token, to give the response with `signed_in`."""
    if user is not None:
        return user, None
    count_new_guest(request)
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


async def get_question(
    request: Request,
    attempt_id: RowId,
    number: RowId,
    user: CurrentUser,
    session: SessionDep,
    catalog: CatalogDep,
) -> AskedQuestion:
    """Look up /attempts/{attempt_id}/q/{number} for the signed-in learner."""
    engine = request.app.state.engine
    asked = await _asked(engine, catalog, attempt_id, number, user)
    session.add_all((asked.attempt, asked.row))  # the services change them in this session
    return asked


async def ask_question(page: Page, attempt_id: int, number: int) -> AskedQuestion:
    """get_question for a hot form (`form_route`), from its page's inputs. The rows stay
    detached: attempts.submit adds the row to its session only where it reads it back."""
    user = page.signed_in()
    return await _asked(page.engine, page.catalog, attempt_id, number, user)


async def _asked(
    engine: Engine, catalog: Catalog, attempt_id: int, number: int, user: User
) -> AskedQuestion:
    """The question, read on the driver, outside any session's transaction: a POST's session
    is a writer, and its transaction (SQLite's write lock) begins only when the service
    writes, in its turn (app.writes), not while the request is still being prepared."""
    assert user.id is not None
    found = await reads.read(engine, attempts.question_for_user, attempt_id, number, user.id)
    attempt, row = found
    return AskedQuestion(attempt, row, catalog)


QuestionDep = Annotated[AskedQuestion, Depends(get_question)]


# Hot pages --------------------------------------------------------------------------------------
# The pages every learner loads over and over (home, a question) are plain Starlette routes: for
# them FastAPI's per-request work (solving each dependency, validating parameters, its exit
# stack) cost a third of the page's CPU time under load, more than their database reads. A page
# gets what the dependencies above would give it in one step, from the same functions.


@dataclass(frozen=True, slots=True)
class Page:
    """What a hot page needs: its request, visitor, the time, and the app's parts."""

    request: Request
    user: User | None
    now: datetime
    settings: Settings
    catalog: Catalog
    executor: ExecutorClient
    engine: Engine  # pages read through app.reads, and open a session to write

    def signed_in(self) -> User:
        """The signed-in user, or LoginRequired (the page sends the visitor to log in)."""
        if self.user is None:
            raise LoginRequired()
        return self.user

    def render(self, template: str, context: dict[str, Any]) -> Response:
        """The page's HTML from a template."""
        templates = self.request.app.state.templates
        response: Response = templates.TemplateResponse(self.request, template, context)
        return response


async def request_time(request: Request) -> datetime:
    """The time, read as get_now would (the clock tests override too)."""
    clock = request.app.dependency_overrides.get(get_now, get_now)
    now = clock()  # no parameters: get_now, or a test's fake clock
    if isawaitable(now):
        now = await now
    return now


async def open_page(request: Request, now: datetime) -> Page:
    """Gather a hot page's inputs as its dependencies would, at `now` (request_time)."""
    state = request.app.state
    await _follow(state.catalog)
    user = await get_optional_user(request, now)
    return Page(request, user, now, state.settings, state.catalog, state.executor, state.engine)


@asynccontextmanager
async def admitted(request: Request) -> AsyncIterator[None]:
    """Hold one of the process's places for hot requests while inside (app.admission); the
    time waited for it is the request's `admission_wait_s`, which its writes' bound counts."""
    admission: Admission = request.app.state.admission
    async with admission.turn() as waited:
        request.state.admission_wait_s = waited
        yield


PageHandler = Callable[..., Awaitable[Response]]
_ROW_ID_TEXT = re.compile("[0-9]{1,10}")  # ASCII digits, as many as MAX_ROW_ID has


class PageRoute(Route):
    """A hot page's route (`page_route`): the app matches these before its routers."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """As Starlette's, and leave the route in the scope as FastAPI's routes do: the
        request metrics label a request by its route's path template (app.metrics)."""
        match, child_scope = super().matches(scope)
        if match is not Match.NONE:
            child_scope["route"] = self
        return match, child_scope


def page_route(
    router: APIRouter, path: str, *, checked_ids: bool = False
) -> Callable[[PageHandler], PageHandler]:
    """Serve a GET page at path with `handler(page, **path_ids)`, as a plain Starlette route.

    Path parameters are row ids (`{attempt_id}`): anything but a number from 1 to the
    database's largest names no page, a 404 (as RowId's out-of-range numbers are), shown with
    the visitor's own header like any other page. With `checked_ids` (a page that was a
    FastAPI route, and answers as it did): the visitor must be signed in, and then what is
    not a number is a 422 naming it, as for a hot form (`form_route`).
    """

    def register(handler: PageHandler) -> PageHandler:
        async def serve(request: Request) -> Response:
            now = await request_time(request)
            async with admitted(request):
                page = await open_page(request, now)
                texts: dict[str, str] = request.path_params
                if checked_ids:
                    page.signed_in()
                    return await handler(page, **_path_params(texts, {}))
                if not all(_ROW_ID_TEXT.fullmatch(text) for text in texts.values()):
                    raise NotFound()
                ids = {name: int(text) for name, text in texts.items()}
                if not all(1 <= value <= MAX_ROW_ID for value in ids.values()):
                    raise NotFound()
                return await handler(page, **ids)

        route = PageRoute(router.prefix + path, serve, methods=["GET"], name=handler.__name__)
        router.routes.append(route)
        return handler

    return register


# Hot forms ---------------------------------------------------------------------------------------
# The class flow's POSTs (Start, an answer, Next) are plain routes too, for the same reason as the
# hot pages: solving their dependencies cost more than their writes. Their inputs are checked as
# FastAPI would check them (the same pydantic types, the same RequestValidationError, so the same
# 422 messages and 404s), in the same order: the CSRF token, the visitor, the path, the fields.

ROW_ID = TypeAdapter(RowId)
FormHandler = Callable[..., Awaitable[Response]]


def form_route(
    router: APIRouter, path: str, *, login: bool = True, **types: TypeAdapter[Any]
) -> Callable[[FormHandler], FormHandler]:
    """Serve a POST form at path with `handler(page, form, **path_params)`, a plain route.

    The CSRF token is checked first (403), then (with `login`) that the visitor is signed in;
    path parameters are row ids unless `types` names another type for one (a SlugId):
    invalid, a 422 saying which and why, as FastAPI says it; out of the database's range, a
    404. Fields are read from `form` with `form_fields`.
    """

    def register(handler: FormHandler) -> FormHandler:
        async def serve(request: Request) -> Response:
            # All of the body before its turn (a slow sender waits outside), then its arrival:
            # an answer is judged once complete, however late its headers came before it.
            await request.body()
            now = await request_time(request)
            async with admitted(request):
                page = await open_page(request, now)
                await verify_csrf(request, page.settings)
                if login:
                    page.signed_in()
                form = await request.form()  # read once: verify_csrf's read is cached
                params = _path_params(request.path_params, types)
                return await handler(page, form, **params)

        route = PageRoute(router.prefix + path, serve, methods=["POST"], name=handler.__name__)
        router.routes.append(route)
        return handler

    return register


def _path_params(texts: dict[str, str], types: dict[str, TypeAdapter[Any]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    for name, text in texts.items():
        adapter = types.get(name)
        if adapter is None and _ROW_ID_TEXT.fullmatch(text) and 1 <= int(text) <= MAX_ROW_ID:
            values[name] = int(text)  # the common case, without pydantic
            continue
        try:
            values[name] = (adapter or ROW_ID).validate_python(text)
        except ValidationError as error:
            errors.extend(_located(error, ("path", name)))
    if errors:
        raise RequestValidationError(errors)
    return values


def form_fields(form: FormData, **types: TypeAdapter[Any]) -> dict[str, Any]:
    """The named fields of a form, as FastAPI's `Form()` parameters would have them: a missing
    or empty field is None (a list field: no values), others are checked against their type
    (422 naming the field, as FastAPI names it)."""
    values: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    for name, adapter in types.items():
        listed = adapter.core_schema.get("type") == "list"
        value: Any = form.getlist(name) if listed else form.get(name)
        if value is None or value == "" or value == []:
            values[name] = None
            continue
        try:
            values[name] = adapter.validate_python(value)
        except ValidationError as error:
            errors.extend(_located(error, ("body", name)))
    if errors:
        raise RequestValidationError(errors)
    return values


def _located(error: ValidationError, where: tuple[str, ...]) -> list[dict[str, Any]]:
    """Pydantic's errors for one value, located as FastAPI locates a parameter's."""
    return [{**item, "loc": (*where, *item["loc"])} for item in error.errors(include_url=False)]

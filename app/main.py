"""The app factory: `create_app(settings)` builds a complete app; tests build their own."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, cast
from urllib.parse import quote

import anyio.to_thread
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics, obs
from app.accounts import routes as account_routes
from app.accounts import service as accounts
from app.accounts.throttle import Throttle
from app.admission import Admission, admission_limit
from app.analytics import routes as analytics_routes
from app.attempts import routes as attempt_routes
from app.bodies import BodyLimits
from app.bus_client import QueueCollector, RedisExecutorClient
from app.challenges import routes as challenge_routes
from app.challenges.catalog import Catalog
from app.classes import routes as class_routes
from app.config import Settings
from app.db import WriteLockTimeout, dispose, make_engine, thread_connections, write_lanes
from app.deps import CSRF_COOKIE, PageRoute, use_csrf_seed, wants_json
from app.errors import Busy, LoginRequired, NotFound, RankLabError
from app.executor_client import ExecutorClient, HttpExecutorClient, NoExecutor
from app.labs import routes as lab_routes
from app.labs.live import LiveRuns, MemoryLiveRuns
from app.labs.live_redis import RedisLiveRuns
from app.lessons import routes as lesson_routes
from app.lti import routes as lti_routes
from app.modes import cards as card_routes
from app.modes import routes as mode_routes
from app.progress import routes as progress_routes
from app.publishing.service import Publisher
from app.runs import routes as run_routes
from app.runs.fair import FairRuns
from app.runs.service import HealthWatch
from app.staff import routes as staff_routes
from app.staff import verify_routes as staff_verify_routes
from app.static_assets import StaticAssets
from app.static_assets import url as static_url
from app.templating import build_templates
from app.verification import proofs
from app.verification.jobs import JobRegistry, VerifyJobs
from app.verification.jobs_redis import RedisJobRegistry
from app.writes import BUSY_MESSAGE, WriteQueue

RECONNECTED_MESSAGE = (
    "The connection to the database was lost for a moment and has been made again. This page "
    "sends your request again by itself; an answer never counts twice."
)

log = logging.getLogger("ranklab")


def create_app(settings: Settings | None = None, executor: ExecutorClient | None = None) -> FastAPI:
    """Build the app: database engine, catalog (broken files reported, not fatal), routes."""
    settings = settings or Settings()
    if settings.secret_key_file is not None:
        log.warning(
            "RANKLAB_SECRET_KEY is not set: signing with the secret made for this install, kept "
            "in %s (keep it private; production needs RANKLAB_SECRET_KEY)",
            settings.secret_key_file,
        )
    engine = make_engine(
        settings.database_url,
        settings.database_pool_size,
        settings.sqlite_synchronous,
        settings.write_lanes,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Worker threads and pooled connections sized together: each thread holds at most one
        # connection, so no thread ever waits for one (PostgreSQL's pool is bounded).
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = thread_connections(engine)
        yield
        await live_runs.close()  # lab runs in flight are stopped (their ranks killed)
        if isinstance(executor, RedisExecutorClient):
            await executor.aclose()  # the SSE readers' reads of runs: each closes its connection
        await dispose(engine)  # close pooled connections on shutdown
        metrics.mark_process_dead(os.getpid())  # a stopped worker's live gauges go

    app = FastAPI(
        title="RankLab",
        docs_url=None,  # served by _api_docs, from static/vendor
        redoc_url=None,
        lifespan=lifespan,
        # FastAPI's built-in OpenTelemetry hooks look at the environment on every request
        # (~3% of a page under load); RankLab exports no traces, metrics or logs through them.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.engine = engine
    # Writes wait their turn here (app.writes): never more than write_wait_s, then a 503.
    lanes = write_lanes(engine, settings.write_lanes)  # PostgreSQL's: a connection each
    app.state.writes = WriteQueue(engine, lanes, settings.write_wait_s)
    # Hot pages and forms are worked on a few at a time, in order (app.admission).
    admitted = settings.admission_limit or admission_limit(engine)
    app.state.admission = Admission(admitted, settings.write_wait_s)
    publisher = Publisher(engine, settings.challenges_dir / proofs.FILE_NAME, settings.content_gate)
    app.state.catalog = Catalog.load(settings.challenges_dir, publisher, settings.content_check_s)
    for error in app.state.catalog.errors:
        log.error("challenge file skipped: %s", error)
    app.state.templates = build_templates(auto_reload=settings.reload_templates)
    if executor is None:
        executor = _executor_client(settings)
    app.state.executor = executor
    app.state.executor_health = HealthWatch(executor)  # what pages say of runs (app.runs)
    # Every run route takes its turn here: one run per learner, a rate, slots shared fairly
    # among parties (a signed-in learner; the guests of one address), a bounded line.
    app.state.run_gate = FairRuns(
        settings.runs_at_once,
        rate=settings.runs_per_learner,
        storage=settings.rate_limit_storage,
        waiting_per_party=settings.runs_waiting_per_party,
        waiting_in_all=settings.runs_waiting,
    )
    app.state.verify_jobs = _verify_jobs(executor)  # staff Verify (on the bus: any process)
    live_runs = _live_runs(executor, engine, settings)
    app.state.live_runs = live_runs  # lab runs streaming (on the job bus: from any process)

    app.mount("/static", StaticAssets(), name="static")
    for module in (
        challenge_routes,
        attempt_routes,
        account_routes,
        progress_routes,
        staff_routes,
        staff_verify_routes,
        class_routes,
        run_routes,
        analytics_routes,
        mode_routes,
        card_routes,
        lab_routes,
        lesson_routes,
        lti_routes,
        metrics,
    ):
        app.include_router(module.router)
        # Its hot pages also go first: FastAPI matches an included router's routes one by one.
        app.router.routes[:0] = [r for r in module.router.routes if isinstance(r, PageRoute)]
    _api_docs(app)
    app.add_middleware(BodyLimits, settings=settings)  # inside the security headers' middleware
    _install_security(app, settings)
    # Outermost of the app's own middleware: its id and timing cover everything inside.
    app.add_middleware(
        obs.RequestObserver, access_log=settings.access_log and settings.log_format == "json"
    )
    _install_error_handlers(app)
    return app


# The job bus's gauges at /metrics, once per queue URL however many apps this process builds.
_queue_collectors: dict[str, QueueCollector] = {}


def _executor_client(settings: Settings) -> ExecutorClient:
    """The job bus when RANKLAB_QUEUE_URL is set, else one executor over HTTP (or none)."""
    if settings.queue_url:
        client = RedisExecutorClient(
            settings.queue_url,
            settings.executor_timeout_s,
            settings.queue_limit,
            readers_per_run=settings.sse_readers_per_run,
            readers=settings.sse_readers,
        )
        if settings.queue_url not in _queue_collectors:
            # One bus's series at a time: they have the same names whatever the bus, so an app
            # made for another bus in this process (tests do) takes the place of the last one.
            for known in _queue_collectors.values():
                metrics.unregister_collector(known)
            _queue_collectors.clear()
            _queue_collectors[settings.queue_url] = QueueCollector(client)
            metrics.register_collector(_queue_collectors[settings.queue_url])
        return client
    if settings.executor_url:
        return HttpExecutorClient(
            settings.executor_url, settings.executor_timeout_s, token=settings.executor_token
        )
    return NoExecutor()


def _live_runs(executor: ExecutorClient, engine: Any, settings: Settings) -> LiveRuns:
    """Lab runs on Redis beside the job bus, so that every app process can follow and stop
    them; without a bus, in this process (the embedded executor serves one process)."""
    if isinstance(executor, RedisExecutorClient):
        cut_off = partial(lab_routes.record_cut_off, engine)
        return RedisLiveRuns(
            executor.url,
            cut_off,
            readers_per_run=settings.sse_readers_per_run,
            readers=settings.sse_readers,
        )
    return MemoryLiveRuns(
        readers_per_run=settings.sse_readers_per_run, readers=settings.sse_readers
    )


def _verify_jobs(executor: ExecutorClient) -> VerifyJobs:
    """Staff verification progress on Redis beside the job bus, so that a poll reaching any app
    process shows it; without a bus, in this process (as lab runs)."""
    if isinstance(executor, RedisExecutorClient):
        return RedisJobRegistry(executor.url)
    return JobRegistry()


def content_security_policy(nonce: str) -> str:
    """The policy for every response: scripts only with this response's nonce, nothing framed.

    No 'unsafe-inline' and no 'unsafe-eval' anywhere: Alpine is its CSP build (no `new Function`),
    htmx is told not to inject its indicator <style> nor to evaluate code (the htmx-config meta
    tag in base.html), and Chart.js styles its canvas through the CSSOM, which style-src allows.
    The lab's code editor (CodeMirror) adds <style> elements: they carry the same nonce.
    """
    return "; ".join(
        [
            "default-src 'self'",
            f"script-src 'nonce-{nonce}'",
            f"style-src 'self' 'nonce-{nonce}'",  # the code editor's <style> tags carry it
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def _docs_policy(nonce: str) -> str:
    """The policy for /api/docs (Swagger UI, vendored): the same, but Swagger UI places its
    widgets with inline styles, so inline style is allowed on this page only."""
    # A nonce in style-src would make browsers ignore 'unsafe-inline': this page has none.
    return content_security_policy(nonce).replace(
        f"style-src 'self' 'nonce-{nonce}'", "style-src 'self' 'unsafe-inline'"
    )


def _api_docs(app: FastAPI) -> None:
    """Swagger UI for the JSON API, served from static/vendor (FastAPI's default loads it from a
    CDN, which neither a machine without internet nor the policy above allows)."""

    @app.get(DOCS_URL, include_in_schema=False)
    async def api_docs(request: Request) -> HTMLResponse:
        nonce = request.state.csp_nonce
        bundle = static_url(SWAGGER + "/swagger-ui-bundle.js")
        return HTMLResponse(
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            "<title>RankLab API</title>"
            f'<link rel="stylesheet" href="{static_url(SWAGGER + "/swagger-ui.css")}">'
            f'</head><body><div id="swagger-ui"></div>'
            f'<script nonce="{nonce}" src="{bundle}"></script>'
            f'<script nonce="{nonce}">window.ui = SwaggerUIBundle('
            f'{{url: "{app.openapi_url}", dom_id: "#swagger-ui"}});</script>'
            "</body></html>"
        )


DOCS_URL = "/api/docs"
SWAGGER = "vendor/swagger-ui"
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",  # for browsers that predate frame-ancestors
    "Referrer-Policy": "same-origin",
}


def _install_security(app: FastAPI, settings: Settings) -> None:
    """Security headers with a per-request CSP nonce, the CSRF seed cookie, log-in throttling."""
    app.state.throttle = Throttle(settings)
    app.add_middleware(SecurityHeaders, settings=settings, docs_url=DOCS_URL)


class SecurityHeaders:
    """Per request: a CSRF seed (renewed routes send a new cookie) and a CSP nonce; per response:
    the policy and the other security headers.

    A plain ASGI middleware that edits the response's start message: Starlette's
    BaseHTTPMiddleware (`@app.middleware`) runs each request in a task with a memory stream,
    which cost a third of the event loop's time per page under load.
    """

    def __init__(self, app: ASGIApp, settings: Settings, docs_url: str | None) -> None:
        self.app = app
        self.settings = settings
        self.docs_url = docs_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Set the request's seed and nonce, then add the headers as the response starts."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        # Every visitor gets a random CSRF seed cookie; forms carry an HMAC of it. A route that
        # changes privileges renews the seed (app.deps.renew_csrf_seed) and the cookie follows.
        incoming = connection.cookies.get(CSRF_COOKIE)
        use_csrf_seed(connection, incoming or accounts.new_csrf_seed())  # type: ignore[arg-type]
        nonce = secrets.token_urlsafe(16)
        connection.state.csp_nonce = nonce  # templates put it on every <script> (csp_nonce)
        policy = (
            _docs_policy(nonce)
            if scope["path"] == self.docs_url
            else content_security_policy(nonce)
        )

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                self._add_headers(message, connection, incoming, policy)
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _add_headers(
        self, message: Message, connection: HTTPConnection, incoming: str | None, policy: str
    ) -> None:
        headers = MutableHeaders(scope=message)
        headers["Content-Security-Policy"] = policy
        seed = connection.state.csrf_seed
        if seed != incoming:
            cookie = Response()
            cookie.set_cookie(
                CSRF_COOKIE, seed, httponly=True, samesite="lax", secure=self.settings.cookie_secure
            )
            headers.append("set-cookie", cookie.headers["set-cookie"])
        for name, value in _SECURITY_HEADERS.items():
            headers.setdefault(name, value)


def _install_error_handlers(app: FastAPI) -> None:
    def render(
        request: Request,
        status: int,
        title: str,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        if wants_json(request):
            return JSONResponse({"detail": message}, status_code=status, headers=headers)
        if request.headers.get("hx-request") == "true":
            return HTMLResponse(
                f'<p class="error" role="alert">{_escape(message)}</p>',
                status_code=status,
                headers=headers,
            )
        templates = request.app.state.templates
        return templates.TemplateResponse(
            request,
            "error.html",
            {"title": title, "message": message, "status": status},
            status_code=status,
            headers=headers,
        )

    @app.exception_handler(RankLabError)
    async def ranklab_error(request: Request, error: RankLabError) -> Response:
        if isinstance(error, LoginRequired) and not wants_json(request):
            # The query too (a class's join link carries its code), escaped to stay one value.
            asked = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?next={quote(asked, safe='/')}", status_code=303)
        wait = error.retry_after
        headers = {"Retry-After": str(wait)} if wait is not None else None
        return render(request, error.status_code, error.title, error.message, headers)

    @app.exception_handler(Busy)
    async def busy(request: Request, error: Busy) -> Response:
        return await _busy_page(request, error, render)

    async def overloaded(request: Request, _error: Exception) -> Response:
        # Whatever waited too long for the database (a pool checkout, a thread's turn at
        # SQLite's lock, its busy handler): the same fast, kind 503 as the write queue's.
        return await busy(request, Busy(BUSY_MESSAGE))

    for waited_too_long in (WriteLockTimeout, SQLAlchemyTimeout):
        app.add_exception_handler(waited_too_long, overloaded)

    @app.exception_handler(OperationalError)
    async def database_error(request: Request, error: OperationalError) -> Response:
        if "database is locked" in str(error.orig):
            return await overloaded(request, error)
        if error.connection_invalidated:
            # The database dropped a pooled connection (it restarted): the pool renews them,
            # and the page sends the same form again, whose submission token keeps an answer
            # from counting twice even if its commit had gone through.
            return await busy(request, Busy(RECONNECTED_MESSAGE))
        raise error

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        # Keep the exception's headers (a 405's Allow, a 401's WWW-Authenticate).
        headers = dict(error.headers or {})
        if error.status_code == 405:
            headers["Allow"] = _allowed_methods(request) or headers.get("Allow", "")
        return render(request, error.status_code, "Error", str(error.detail), headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> Response:
        if any(_out_of_range_path_id(item) for item in error.errors()):
            # A number no row can have (app.deps.RowId) names nothing, like any unknown id.
            return await ranklab_error(request, NotFound())
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'][1:])}: {item['msg']}"
            for item in error.errors()
        )
        return render(request, 422, "Invalid request", problems or "invalid request")


async def _busy_page(request: Request, error: Busy, render: Any) -> Response:
    """503 with Retry-After; as a page, one that tries again by itself: a GET reloads, a form
    is sent again as it was (its fields kept, an answer's submission token too)."""
    headers = {"Retry-After": str(error.retry_after)}
    if wants_json(request) or request.headers.get("hx-request") == "true":
        return cast(Response, render(request, 503, error.title, error.message, headers))
    resend = None
    if request.method == "POST":
        try:
            form = await request.form()
        except Exception:  # an unreadable body: the page says so, and offers no resend
            form = None
        if form is not None:
            fields = [
                (k, v)
                for k, v in form.multi_items()
                if isinstance(v, str) and k not in error.resend
            ]
            fields.extend(error.resend.items())
            resend = {"action": request.url.path, "fields": fields}
    context = {
        "title": error.title,
        "message": error.message,
        "retry_after": error.retry_after,
        "resend": resend,
    }
    templates = request.app.state.templates
    return cast(
        Response,
        templates.TemplateResponse(request, "busy.html", context, status_code=503, headers=headers),
    )


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request) -> str:
    """Every method some route accepts at this path (Starlette's 405 names one route's only)."""
    path = {
        "type": "http",
        "path": request.scope["path"],
        "root_path": request.scope.get("root_path", ""),
    }

    def accepts(route: BaseRoute, method: str) -> bool:
        # A mount matches any method; the only one is /static, which serves GET and HEAD.
        if isinstance(route, Mount) and method not in ("GET", "HEAD"):
            return False
        return route.matches({**path, "method": method})[0] is Match.FULL

    routes = request.app.router.routes
    return ", ".join(m for m in _METHODS if any(accepts(route, m) for route in routes))


def _out_of_range_path_id(problem: Any) -> bool:
    """Whether a validation problem is a numeric path id outside the database's range."""
    return problem["loc"][0] == "path" and problem["type"] in (
        "greater_than_equal",
        "less_than_equal",
    )


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))

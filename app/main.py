"""The app factory: `create_app(settings)` builds a complete app; tests build their own."""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.accounts import routes as account_routes
from app.accounts import service as accounts
from app.analytics import routes as analytics_routes
from app.attempts import routes as attempt_routes
from app.challenges import routes as challenge_routes
from app.challenges.catalog import Catalog
from app.config import Settings
from app.db import make_engine
from app.deps import CSRF_COOKIE
from app.errors import LoginRequired, NotFound, RankLabError
from app.executor_client import ExecutorClient, HttpExecutorClient, NoExecutor
from app.progress import routes as progress_routes
from app.runs import routes as run_routes
from app.staff import routes as staff_routes
from app.templating import build_templates
from app.verification.jobs import JobRegistry

log = logging.getLogger("ranklab")
STATIC_DIR = Path(__file__).resolve().parents[1] / "static"


def create_app(settings: Settings | None = None, executor: ExecutorClient | None = None) -> FastAPI:
    """Build the app: database engine, catalog (broken files reported, not fatal), routes."""
    settings = settings or Settings()
    engine = make_engine(settings.database_url)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        engine.dispose()  # close pooled connections on shutdown

    app = FastAPI(title="RankLab", docs_url="/api/docs", redoc_url=None, lifespan=lifespan)
    app.state.settings = settings
    app.state.engine = engine
    app.state.catalog = Catalog.load(settings.challenges_dir)
    for error in app.state.catalog.errors:
        log.error("challenge file skipped: %s", error)
    app.state.templates = build_templates()
    if executor is None:
        executor = (
            HttpExecutorClient(
                settings.executor_url, settings.executor_timeout_s, token=settings.executor_token
            )
            if settings.executor_url
            else NoExecutor()
        )
    app.state.executor = executor
    app.state.verify_jobs = JobRegistry()  # staff verification running in this process

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    for module in (
        challenge_routes,
        attempt_routes,
        account_routes,
        progress_routes,
        staff_routes,
        run_routes,
        analytics_routes,
    ):
        app.include_router(module.router)
    _install_csrf_cookie(app, settings)
    _install_error_handlers(app)
    return app


def _install_csrf_cookie(app: FastAPI, settings: Settings) -> None:
    @app.middleware("http")
    async def csrf_cookie(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        # Every visitor gets a random CSRF seed cookie; forms carry an HMAC of it.
        seed = request.cookies.get(CSRF_COOKIE)
        fresh = seed is None
        if seed is None:
            seed = secrets.token_urlsafe(32)
        request.state.csrf_token = accounts.csrf_token(settings.secret_key, seed)
        request.state.csrf_seed = seed
        response = await call_next(request)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE, seed, httponly=True, samesite="lax", secure=settings.cookie_secure
            )
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or "application/json" in request.headers.get(
        "accept", ""
    )


def _install_error_handlers(app: FastAPI) -> None:
    def render(request: Request, status: int, title: str, message: str) -> Response:
        if _wants_json(request):
            return JSONResponse({"detail": message}, status_code=status)
        if request.headers.get("hx-request") == "true":
            return HTMLResponse(
                f'<p class="error" role="alert">{_escape(message)}</p>', status_code=status
            )
        templates = request.app.state.templates
        return templates.TemplateResponse(
            request,
            "error.html",
            {"title": title, "message": message, "status": status},
            status_code=status,
        )

    @app.exception_handler(RankLabError)
    async def ranklab_error(request: Request, error: RankLabError) -> Response:
        if isinstance(error, LoginRequired) and not _wants_json(request):
            return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
        return render(request, error.status_code, error.title, error.message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        return render(request, error.status_code, "Error", str(error.detail))

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


def _out_of_range_path_id(problem: Any) -> bool:
    """Whether a validation problem is a numeric path id outside the database's range."""
    return problem["loc"][0] == "path" and problem["type"] in (
        "greater_than_equal",
        "less_than_equal",
    )


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))

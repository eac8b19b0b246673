"""FastAPI dependencies as Annotated aliases: the one place routes get what they need."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Path, Request
from sqlmodel import Session

from app.accounts import service as accounts
from app.accounts.models import Role, User
from app.challenges.catalog import Catalog
from app.config import Settings
from app.db import session_scope, utcnow
from app.errors import Forbidden, LoginRequired
from app.executor_client import ExecutorClient
from app.verification.jobs import JobRegistry

SESSION_COOKIE = "ranklab_session"
CSRF_COOKIE = "ranklab_csrf"

# Ids and question numbers are INTEGER columns, 32-bit on PostgreSQL (the narrower database): a
# larger number cannot name a row, and the driver would fail on it with a 500. A number outside
# this range names nothing, so the validation handler in app.main answers 404 for it.
MAX_ROW_ID = 2**31 - 1
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="A positive id or 1-based number.")]


def get_settings(request: Request) -> Settings:
    """Return the app's settings (set by create_app)."""
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    """Yield a database session for one request."""
    yield from session_scope(request.app.state.engine)


def get_catalog(request: Request) -> Catalog:
    """Return the loaded challenge catalog."""
    catalog: Catalog = request.app.state.catalog
    return catalog


def get_executor(request: Request) -> ExecutorClient:
    """Return the executor client (tests inject a fake one)."""
    client: ExecutorClient = request.app.state.executor
    return client


def get_verify_jobs(request: Request) -> JobRegistry:
    """Return this process's registry of staff verification jobs."""
    registry: JobRegistry = request.app.state.verify_jobs
    return registry


def get_now() -> datetime:
    """Return the server's clock; tests override this one dependency to move time."""
    return utcnow()


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
ExecutorDep = Annotated[ExecutorClient, Depends(get_executor)]
NowDep = Annotated[datetime, Depends(get_now)]
VerifyJobsDep = Annotated[JobRegistry, Depends(get_verify_jobs)]


def get_optional_user(request: Request, session: SessionDep, now: NowDep) -> User | None:
    """Return the signed-in user (guest or account), or None."""
    user = accounts.user_for_token(session, request.cookies.get(SESSION_COOKIE), now)
    if user is not None:
        # Detached with its columns loaded: a rollback later in the request (a refused answer)
        # must not expire the object that error pages still render.
        session.expunge(user)
    # End the read at once: on SQLite every transaction holds the write lock (BEGIN IMMEDIATE),
    # and a request may go on to wait for the executor.
    session.commit()
    request.state.user = user
    return user


OptionalUser = Annotated[User | None, Depends(get_optional_user)]


def get_current_user(user: OptionalUser) -> User:
    """Return the signed-in user or refuse (HTML pages redirect to the start page)."""
    if user is None:
        raise LoginRequired()
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]


def require_role(*roles: Role) -> Any:
    """A dependency that lets through only users with one of these roles (guests log in, 403)."""

    def check(user: CurrentUser) -> User:
        if user.role not in roles:
            raise Forbidden("This page is for " + " and ".join(f"{r.value}s" for r in roles) + ".")
        return user

    return Depends(check)


StaffUser = Annotated[User, require_role(Role.INSTRUCTOR, Role.ADMIN)]
AdminUser = Annotated[User, require_role(Role.ADMIN)]


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

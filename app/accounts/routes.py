"""Guest start, sign-up (keeps a guest's progress), log in and log out."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from app.accounts import rules
from app.accounts import service as accounts
from app.accounts.models import Role, TimeAccommodation, User
from app.accounts.throttle import Refusal
from app.config import Settings
from app.deps import (
    SESSION_COOKIE,
    AdminUser,
    CsrfDep,
    NowDep,
    OptionalUser,
    RowId,
    SessionDep,
    SettingsDep,
    ThrottleDep,
    client_address,
    count_new_guest,
    renew_csrf_seed,
    sign_in,
    wants_json,
)
from app.errors import BadRequest, Conflict

router = APIRouter()
DEVICE_COOKIE = "ranklab_device"
TextField = Annotated[str, Form(max_length=1000)]
NextField = Annotated[str, Form(max_length=500)]


def _safe_next(target: str | None) -> str:
    # Only same-site paths: an open redirect would let a link send learners elsewhere.
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return "/"


def _remember_device(response: Response, user: User, settings: Settings) -> None:
    """Give the browser that signed in to this account a new device cookie naming it."""
    value = rules.device_cookie(
        settings.secret_key, user.username or "", accounts.new_device_nonce()
    )
    response.set_cookie(
        DEVICE_COOKIE,
        value,
        max_age=settings.device_cookie_days * 86400,
        path="/login",  # read only by log-ins
        httponly=True,
        samesite="lax",
        secure=settings.cookie_secure,
    )


def _too_many(
    request: Request, template: str, context: dict[str, Any], refusal: Refusal
) -> Response:
    """Answer 429 with Retry-After: the form again with the message, or JSON's detail."""
    headers = {"Retry-After": str(refusal.retry_after_s)}
    if wants_json(request):
        return JSONResponse({"detail": refusal.message}, status_code=429, headers=headers)
    return request.app.state.templates.TemplateResponse(
        request, template, {**context, "error": refusal.message}, status_code=429, headers=headers
    )


@router.post("/guest", dependencies=[CsrfDep])
def start_as_guest(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    user: OptionalUser,
    next: NextField = "/",
):
    """One click: a guest account and a session cookie."""
    response = RedirectResponse(_safe_next(next), status_code=303)
    if user is not None:
        return response
    count_new_guest(request)
    guest = accounts.create_guest(session, now)
    token = accounts.replace_session(
        session, request.cookies.get(SESSION_COOKIE), guest, now, settings.session_days
    )
    return sign_in(request, response, token, settings)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/"):
    """The log-in page, with a one-click guest start."""
    return request.app.state.templates.TemplateResponse(
        request, "login.html", {"next": _safe_next(next), "error": None}
    )


@router.post("/login", dependencies=[CsrfDep])
def login(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    throttle: ThrottleDep,
    now: NowDep,
    username: TextField,
    password: TextField,
    next: NextField = "/",
):
    """Check the password (within the attempt limits) and open a new session."""
    address = client_address(request)
    device = rules.device_of(settings.secret_key, request.cookies.get(DEVICE_COOKIE), username)
    refusal = throttle.login(username, address, device)
    if refusal is not None:
        return _too_many(request, "login.html", {"next": _safe_next(next)}, refusal)
    user = accounts.authenticate(session, username.strip(), password)
    if user is None:
        throttle.login_failed(username, address, device)
        return request.app.state.templates.TemplateResponse(
            request,
            "login.html",
            {"next": _safe_next(next), "error": "Wrong username or password."},
            status_code=400,
        )
    response = RedirectResponse(_safe_next(next), status_code=303)
    token = accounts.replace_session(
        session, request.cookies.get(SESSION_COOKIE), user, now, settings.session_days
    )
    _remember_device(response, user, settings)
    return sign_in(request, response, token, settings)


@router.get("/register", response_class=HTMLResponse)
def register_page(request: Request, user: OptionalUser):
    """The sign-up page; a guest signing up keeps their progress."""
    return request.app.state.templates.TemplateResponse(
        request, "register.html", {"error": None, "is_guest": bool(user and user.is_guest)}
    )


@router.post("/register", dependencies=[CsrfDep])
def register(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    throttle: ThrottleDep,
    now: NowDep,
    user: OptionalUser,
    username: TextField,
    password: TextField,
):
    """Create an account (turning the current guest into it) and sign in with a new session."""
    guest: User | None = user if user is not None and user.is_guest else None
    refusal = throttle.register(client_address(request))
    if refusal is not None:
        return _too_many(request, "register.html", {"is_guest": guest is not None}, refusal)
    try:
        account = accounts.create_account(session, username.strip(), password, now, guest=guest)
    except (BadRequest, Conflict) as error:
        return request.app.state.templates.TemplateResponse(
            request,
            "register.html",
            {"error": error.message, "is_guest": guest is not None},
            status_code=error.status_code,
        )
    response = RedirectResponse("/me/progress", status_code=303)
    # The guest's rows (attempts, answers) now belong to the account; no guest token survives.
    token = accounts.replace_session(
        session,
        request.cookies.get(SESSION_COOKIE),
        account,
        now,
        settings.session_days,
        end_all_of_user=guest is not None,
    )
    _remember_device(response, account, settings)
    return sign_in(request, response, token, settings)


@router.get("/logout", response_class=HTMLResponse)
def logout_page(request: Request, user: OptionalUser):
    """Ask before logging out; a guest is warned that their progress goes with the session."""
    return request.app.state.templates.TemplateResponse(request, "logout.html", {})


@router.post("/logout", dependencies=[CsrfDep])
def logout(request: Request, session: SessionDep):
    """End the session on the server (a replayed cookie signs in as nobody) and renew CSRF."""
    accounts.close_session(session, request.cookies.get(SESSION_COOKIE))
    renew_csrf_seed(request)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


@router.get("/admin/users", response_class=HTMLResponse)
def users_page(request: Request, admin: AdminUser, session: SessionDep):
    """Admins see every user, change roles and grant timing accommodations."""
    return request.app.state.templates.TemplateResponse(
        request,
        "staff/users.html",
        {
            "users": accounts.list_users(session),
            "roles": list(Role),
            "accommodations": list(TimeAccommodation),
        },
    )


@router.post("/admin/users/{user_id}", dependencies=[CsrfDep])
def update_user(
    user_id: RowId,
    admin: AdminUser,
    session: SessionDep,
    role: Annotated[Role | None, Form()] = None,
    accommodation: Annotated[TimeAccommodation | None, Form()] = None,
):
    """Change one user's role and/or time accommodation (an admin's own role stays as it is)."""
    assert admin.id is not None
    accounts.update_user(session, user_id, admin.id, role=role, accommodation=accommodation)
    return RedirectResponse("/admin/users", status_code=303)

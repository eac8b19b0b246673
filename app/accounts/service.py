"""Users, passwords (argon2) and browser sessions. Only services commit."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from typing import cast

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import bindparam, delete, insert, or_
from sqlalchemy import select as select_columns
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import make_transient_to_detached
from sqlmodel import Session, SQLModel, col, select

from app import reads
from app.accounts import rules
from app.accounts.models import Role, TimeAccommodation, User, WebSession
from app.db import begin_write
from app.errors import BadRequest, Conflict, Forbidden, NotFound

_hasher = PasswordHasher()
# Verifying against a dummy hash when the user does not exist keeps the timing the same.
_DUMMY_HASH = _hasher.hash("not-a-real-password")


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_guest(session: Session, now: datetime) -> User:
    """Create a guest learner (one click, no details)."""
    user = User(role=Role.LEARNER, is_guest=True, created_at=now)
    session.add(user)
    session.commit()
    session.refresh(user)
    return user


def create_account(
    session: Session,
    username: str,
    password: str,
    now: datetime,
    role: Role = Role.LEARNER,
    guest: User | None = None,
) -> User:
    """Create an account, or turn the current guest into one so their progress is kept."""
    for problem in (rules.username_problem(username), rules.password_problem(password)):
        if problem:
            raise BadRequest(problem)
    taken = session.exec(select(User).where(User.username == username)).first()
    if taken is not None:
        raise Conflict("That username is taken.")
    user = guest if guest is not None and guest.is_guest else User(created_at=now, role=role)
    user.username = username
    user.password_hash = _hasher.hash(password)
    user.is_guest = False
    session.add(user)
    try:
        session.commit()
    except IntegrityError as error:  # two sign-ups racing for one name
        session.rollback()
        raise Conflict("That username is taken.") from error
    session.refresh(user)
    return user


def authenticate(session: Session, username: str, password: str) -> User | None:
    """Return the user if the password is right, else None."""
    # PostgreSQL refuses text holding NUL (the query would fail: a 500); no username holds one.
    named = select(User).where(User.username == username)
    user = None if "\x00" in username else session.exec(named).first()
    try:
        _hasher.verify(user.password_hash if user and user.password_hash else _DUMMY_HASH, password)
    except (VerificationError, InvalidHashError):
        return None
    if user is None or user.password_hash is None:
        return None
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = _hasher.hash(password)
        session.add(user)
        session.commit()
    return user


def open_session(session: Session, user: User, now: datetime, days: int) -> str:
    """Start a browser session for a user; return the cookie token (only its hash is stored)."""
    token = secrets.token_urlsafe(32)
    assert user.id is not None
    session.add(
        WebSession(
            token_hash=_token_hash(token),
            user_id=user.id,
            created_at=now,
            expires_at=now + timedelta(days=days),
        )
    )
    session.commit()
    return token


def replace_session(
    session: Session,
    old_token: str | None,
    user: User,
    now: datetime,
    days: int,
    *,
    end_all_of_user: bool = False,
) -> str:
    """Open a new session for user and end the browser's old one (every privilege change).

    A token known before the change (one planted in the browser by someone else) then signs in
    as nobody. `end_all_of_user` also ends the user's other sessions: a guest becoming an account
    keeps their rows (attempts, answers) but no token issued to the guest survives.
    """
    assert user.id is not None
    stale = []
    if old_token:
        stale.append(col(WebSession.token_hash) == _token_hash(old_token))
    if end_all_of_user:
        stale.append(col(WebSession.user_id) == user.id)
    if stale:
        for row in session.exec(select(WebSession).where(or_(*stale))):
            session.delete(row)
    return open_session(session, user, now, days)  # one commit: the swap is atomic


def write_guest(
    session: Session, old_token: str | None, now: datetime, days: int
) -> tuple[User, str]:
    """A new guest and its browser session (ending the browser's old one), as create_guest and
    replace_session make them, but written through the session's connection and not committed:
    the caller commits them with the guest's first write (Start), one transaction instead of
    three, and prebuilt statements instead of the ORM's flush and refresh. The user is
    detached, as user_for_token gives one."""
    begin_write(session)
    connection = session.connection()
    user = User(
        role=Role.LEARNER,
        is_guest=True,
        time_accommodation=TimeAccommodation.STANDARD,
        created_at=now,
    )
    values = {key: getattr(user, key) for key in _USER_FIELDS}
    user.id = user_id = connection.execute(_NEW_USER, values).scalar_one()
    make_transient_to_detached(user)
    if old_token:  # a token known before this sign-in signs in as nobody (replace_session)
        connection.execute(_END_SESSION, {"token_hash": _token_hash(old_token)})
    token = secrets.token_urlsafe(32)
    row = {
        "token_hash": _token_hash(token),
        "user_id": user_id,
        "created_at": now,
        "expires_at": now + timedelta(days=days),
    }
    connection.execute(_NEW_SESSION, row)
    return user, token


# Every page asks it: one query, compiled once and run on the driver (app.reads), whose row
# becomes a detached User without the ORM's loading machinery.
_USERS = User.__table__  # type: ignore[attr-defined]
_SESSIONS = WebSession.__table__  # type: ignore[attr-defined]
_NEW_USER = insert(_USERS).returning(_USERS.c.id)
_USER_FIELDS = [column.key for column in _USERS.columns if column.key != "id"]
_NEW_SESSION = insert(_SESSIONS)
_END_SESSION = delete(_SESSIONS).where(_SESSIONS.c.token_hash == bindparam("token_hash"))
_LIVE_SESSION_USER = reads.Query(
    select_columns(*_USERS.columns)
    .join_from(_SESSIONS, _USERS, _SESSIONS.c.user_id == _USERS.c.id)
    .where(
        _SESSIONS.c.token_hash == bindparam("token_hash"),
        _SESSIONS.c.expires_at > bindparam("now"),
    ),
    User,
)


def user_for_token(reader: reads.Reader, token: str | None, now: datetime) -> User | None:
    """Return the user of a live session token, or None.

    The user is detached, as if loaded and expunged: reading it needs no session, and a service
    that changes it adds it back (`session.add`), which updates the row.
    """
    if not token:
        return None
    row = reader.first(_LIVE_SESSION_USER, token_hash=_token_hash(token), now=now)
    if row is None:
        return None
    (user,) = _LIVE_SESSION_USER.instances(row)
    return cast(User, user)


def close_session(session: Session, token: str | None) -> None:
    """End a browser session (log out)."""
    if not token:
        return
    row = session.exec(
        select(WebSession).where(WebSession.token_hash == _token_hash(token))
    ).first()
    if row is not None:
        session.delete(row)
        session.commit()


def new_csrf_seed() -> str:
    """Return a fresh random CSRF seed (the value of the visitor's CSRF cookie)."""
    return secrets.token_urlsafe(32)


def new_device_nonce() -> str:
    """Return a fresh random nonce for a device cookie (app.accounts.rules.device_cookie)."""
    return secrets.token_urlsafe(16)


def csrf_token(secret_key: str, seed: str) -> str:
    """Derive the form token from the visitor's CSRF cookie (the raw cookie never enters HTML)."""
    return hmac.new(secret_key.encode(), seed.encode(), hashlib.sha256).hexdigest()


def csrf_valid(secret_key: str, seed: str | None, sent: str | None) -> bool:
    """Check a submitted CSRF token against the visitor's cookie."""
    if not seed or not sent:
        return False
    return hmac.compare_digest(csrf_token(secret_key, seed), sent)


def list_users(session: Session) -> list[User]:
    """Return every account (guests last), for the admin's user page."""
    statement = select(User).order_by(col(User.is_guest), col(User.username), col(User.id))
    return list(session.exec(statement))


def update_user(
    session: Session,
    user_id: int,
    acting_admin_id: int,
    role: Role | None = None,
    accommodation: TimeAccommodation | None = None,
) -> User:
    """Change a user's role or time accommodation; never one's own role, nor the last admin's."""
    user = session.get(User, user_id)
    if user is None:
        raise NotFound("No such user.")
    if role is not None and role is not user.role:
        admins = _lock_admins(session)
        session.refresh(user)  # as it is now that no other role change can run
        if acting_admin_id not in admins:  # demoted by another admin since this request began
            raise Forbidden("You are no longer an admin.")
        if user.is_guest and role is not Role.LEARNER:
            raise BadRequest("Guests cannot be staff: they need an account first.")
        if user.role is Role.ADMIN and role is not Role.ADMIN and len(admins) <= 1:
            raise Conflict("This is the last admin; promote another admin first.")
        if user_id == acting_admin_id:
            raise Forbidden("You cannot change your own role: ask another admin.")
        user.role = role
    if accommodation is not None:
        user.time_accommodation = accommodation
    session.add(user)
    session.commit()
    session.refresh(user)
    return user


def _lock_admins(session: Session) -> list[int]:
    """Lock every admin's row (in id order, so two callers cannot deadlock); return their ids.

    Two admins demoting each other at once must not both see two admins: on PostgreSQL the
    second waits here for the first to commit, then sees its change (SQLite's BEGIN IMMEDIATE
    already runs them one after the other).
    """
    statement = (
        select(User.id).where(User.role == Role.ADMIN).order_by(col(User.id)).with_for_update()
    )
    return [admin_id for admin_id in session.exec(statement) if admin_id is not None]


def prune_idle_guests(session: Session, created_before: datetime) -> int:
    """Delete the guests made before then that never acted (no row names them but their
    browser sessions), with those sessions; return how many went.

    Every table with a column pointing at user_account counts as acting (every table is
    imported: app.models), so a table added later keeps its guests without a change here."""
    users, sessions = _USERS, _SESSIONS
    acted = [
        ~select_columns(column).where(column == users.c.id).exists()
        for table in SQLModel.metadata.sorted_tables
        if table.name not in (users.name, sessions.name)
        for column in table.columns
        for key in column.foreign_keys
        if key.target_fullname == f"{users.name}.id"
    ]
    idle = select_columns(users.c.id).where(
        users.c.is_guest, users.c.created_at < created_before, *acted
    )
    connection = session.connection()
    ids = list(connection.execute(idle).scalars())
    for start in range(0, len(ids), 500):  # bounded IN lists
        batch = ids[start : start + 500]
        connection.execute(delete(sessions).where(sessions.c.user_id.in_(batch)))
        connection.execute(delete(users).where(users.c.id.in_(batch)))
    session.commit()
    return len(ids)

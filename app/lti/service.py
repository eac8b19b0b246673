"""LTI in the database: platforms, the tool's keys, a launch from login to arrival (account,
class, membership, link). Only services commit."""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime

from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.accounts import service as accounts
from app.accounts.models import Role, User
from app.classes import service as classes
from app.classes.models import Assignment, Klass
from app.db import begin_write
from app.errors import BadRequest, NotFound
from app.lti import keys, rules
from app.lti.models import (
    LtiAccount,
    LtiContext,
    LtiLaunchState,
    LtiPlatform,
    LtiResourceLink,
    LtiToolKey,
)

PUBLISHED_KEYS = 2  # the signing key and the one before it, for platforms that cached our JWKS


def add_platform(
    session: Session,
    issuer: str,
    client_id: str,
    deployment_ids: list[str],
    auth_login_url: str,
    auth_token_url: str,
    jwks_url: str,
    now: datetime,
) -> LtiPlatform:
    """Register (or update) a platform by its issuer and our client id there; make sure the
    tool has a key to sign with."""
    for url in (issuer, auth_login_url, auth_token_url, jwks_url):
        if not re.match(r"^https?://[^\s/]+", url):
            raise BadRequest(f"{url!r} is not an http(s) URL.")
    if not client_id or not deployment_ids:
        raise BadRequest("A platform needs a client id and at least one deployment id.")
    begin_write(session)
    statement = select(LtiPlatform).where(
        LtiPlatform.issuer == issuer, LtiPlatform.client_id == client_id
    )
    platform = session.exec(statement).first() or LtiPlatform(
        issuer=issuer, client_id=client_id, deployment_ids="", auth_login_url="",
        auth_token_url="", jwks_url="", created_at=now,
    )  # fmt: skip
    platform.deployment_ids = " ".join(dict.fromkeys(deployment_ids))
    platform.auth_login_url, platform.auth_token_url = auth_login_url, auth_token_url
    platform.jwks_url = jwks_url
    session.add(platform)
    if session.exec(select(LtiToolKey)).first() is None:
        kid, pem = keys.new_key()
        session.add(LtiToolKey(kid=kid, private_pem=pem, created_at=now))
    session.commit()
    return platform


def platforms(session: Session) -> list[LtiPlatform]:
    """Every registered platform."""
    return list(session.exec(select(LtiPlatform).order_by(col(LtiPlatform.id))).all())


def rotate_key(session: Session, now: datetime) -> str:
    """Make a new signing key; the previous one stays published until the next rotation."""
    begin_write(session)
    kid, pem = keys.new_key()
    session.add(LtiToolKey(kid=kid, private_pem=pem, created_at=now))
    session.commit()
    return kid


def tool_keys(session: Session) -> list[tuple[str, str]]:
    """The published keys (kid, private PEM), the signing key first."""
    statement = select(LtiToolKey).order_by(col(LtiToolKey.id).desc()).limit(PUBLISHED_KEYS)
    return [(row.kid, row.private_pem) for row in session.exec(statement).all()]


def platform_for(session: Session, issuer: str, client_id: str | None) -> LtiPlatform:
    """The registered platform of a login initiation, or a 400 naming what to register."""
    statement = select(LtiPlatform).where(LtiPlatform.issuer == issuer)
    if client_id:
        statement = statement.where(LtiPlatform.client_id == client_id)
    found = list(session.exec(statement).all())
    if len(found) != 1:
        raise BadRequest(
            f"No LTI platform is registered for issuer {issuer!r}"
            + (f" and client id {client_id!r}" if client_id else "")
            + ": the operator adds it with `ranklab lti add-platform`."
        )
    return found[0]


def begin_login(session: Session, platform: LtiPlatform, now: datetime) -> LtiLaunchState:
    """A fresh state and nonce for one launch."""
    assert platform.id is not None
    begin_write(session)
    # Launches never finished (a closed tab) are of no use after their lifetime: clear the old.
    stale = col(LtiLaunchState.created_at) < now - rules.STATE_LIFETIME * 6
    session.connection().execute(delete(LtiLaunchState).where(stale))
    row = LtiLaunchState(
        state=secrets.token_urlsafe(24),
        nonce=secrets.token_urlsafe(24),
        platform_id=platform.id,
        created_at=now,
    )
    session.add(row)
    session.commit()
    return row


def _state(session: Session, state: str, now: datetime) -> tuple[LtiLaunchState, LtiPlatform]:
    row = session.exec(select(LtiLaunchState).where(LtiLaunchState.state == state)).first()
    if row is None:
        raise BadRequest("This launch is unknown here: launch again from the course.")
    if rules.state_expired(row.created_at, now):
        raise BadRequest("This launch took too long: launch again from the course.")
    platform = session.get(LtiPlatform, row.platform_id)
    assert platform is not None
    return row, platform


def verify_launch(
    session: Session, state: str, id_token: str, platform_keys: keys.PlatformKeys, now: datetime
) -> LtiLaunchState:
    """Check the id_token the platform posted for this state (signature, claims, single use) and
    keep its claims for the browser that began the launch. The session may be a reader: the
    write lock is taken only after the platform's keys were fetched (network) and checked."""
    row, platform = _state(session, state, now)
    if row.verified_at is not None:
        raise BadRequest("This launch was used already (a replay?): launch again from the course.")
    try:
        claims = platform_keys.verify(id_token, platform.jwks_url)
        rules.check_launch(
            claims,
            platform.issuer,
            platform.client_id,
            platform.deployment_ids.split(),
            row.nonce,
            now,
        )
    except rules.LaunchRefused as refused:
        raise BadRequest(refused.message) from refused
    begin_write(session)
    # Conditional: of two posts of one token racing, one marks it and the other is refused.
    marked = session.connection().execute(
        update(LtiLaunchState)
        .where(col(LtiLaunchState.id) == row.id, col(LtiLaunchState.verified_at).is_(None))
        .values(claims=json.dumps(claims), verified_at=now)
    )
    if not marked.rowcount:
        session.rollback()
        raise BadRequest("This launch was used already (a replay?): launch again from the course.")
    session.commit()
    session.refresh(row)
    return row


def enter(
    session: Session, state: str, old_token: str | None, days: int, now: datetime
) -> tuple[str, str]:
    """The verified launch's person arrives (in the browser that began it): their account (made
    on first arrival), their class and membership, the link's assignment, and a new browser
    session in one commit; return the session's token and where to send them."""
    begin_write(session)
    row, platform = _state(session, state, now)
    if row.verified_at is None or row.claims is None:
        raise BadRequest("This launch was not completed by the platform: launch again.")
    if row.entered_at is not None:
        raise BadRequest("This launch was used already: launch again from the course.")
    launch = rules.check_launch(
        json.loads(row.claims), platform.issuer, platform.client_id,
        platform.deployment_ids.split(), row.nonce, row.verified_at,
    )  # fmt: skip
    try:
        where = rules.target(launch)
    except rules.LaunchRefused as refused:
        raise BadRequest(refused.message) from refused
    entered = session.connection().execute(
        update(LtiLaunchState)
        .where(col(LtiLaunchState.id) == row.id, col(LtiLaunchState.entered_at).is_(None))
        .values(entered_at=now)
    )
    if not entered.rowcount:
        session.rollback()
        raise BadRequest("This launch was used already: launch again from the course.")
    user = _account(session, launch, now)
    if launch.context_id is not None:
        _join(session, platform, launch, user, where, now)
    try:
        session.flush()
        # Its commit is the launch's: arrival, account, class and session, or none of them.
        token = accounts.replace_session(session, old_token, user, now, days)
    except IntegrityError as error:  # the same person's two launches at once: the other won
        session.rollback()
        raise BadRequest("This launch raced another: launch again from the course.") from error
    return token, where


def _account(session: Session, launch: rules.Launch, now: datetime) -> User:
    """The account of (issuer, sub): made on the first launch, an instructor's as staff."""
    statement = select(LtiAccount).where(
        LtiAccount.issuer == launch.issuer, LtiAccount.subject == launch.subject
    )
    found = session.exec(statement).first()
    user = session.get(User, found.user_id) if found else None
    if user is None:
        user = account_for(session, launch.issuer, launch.subject, launch.name, launch.email, now)
    if launch.is_instructor and user.role == Role.LEARNER:
        user.role = Role.INSTRUCTOR
        session.add(user)
    return user


def account_for(
    session: Session, issuer: str, subject: str, name: str | None, email: str | None, now: datetime
) -> User:
    """The account of a platform's user, made (unsaved until the caller commits) when new: a
    username from their email or name, no password (they arrive through the LMS)."""
    statement = select(LtiAccount).where(LtiAccount.issuer == issuer, LtiAccount.subject == subject)
    found = session.exec(statement).first()
    if found is not None:
        user = session.get(User, found.user_id)
        assert user is not None
        return user
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", (email or "").split("@")[0] or name or "lti")
    base = base.strip("-.")[:30] or "lti"
    user = User(username=f"{base}-{secrets.token_hex(3)}", is_guest=False, created_at=now)
    session.add(user)
    session.flush()
    assert user.id is not None
    session.add(LtiAccount(issuer=issuer, subject=subject, user_id=user.id))
    return user


def _join(
    session: Session,
    platform: LtiPlatform,
    launch: rules.Launch,
    user: User,
    where: str,
    now: datetime,
) -> None:
    """Join the course's class; remember its services and the link's assignment."""
    assert launch.context_id is not None and platform.id is not None
    klass = classes.class_for_lti_context(
        session, launch.issuer, launch.deployment_id, launch.context_id,
        launch.context_title or "Course", user, now, launch.custom.get("class"),
    )  # fmt: skip
    assert klass.id is not None
    role = "instructor" if launch.is_instructor else "learner"
    classes.enrol(
        session, klass, user, role, "lti", now, name=launch.name or "", email=launch.email or ""
    )
    context = session.exec(select(LtiContext).where(LtiContext.class_id == klass.id)).first()
    context = context or LtiContext(class_id=klass.id, platform_id=platform.id)
    context.memberships_url = launch.memberships_url or context.memberships_url
    context.lineitems_url = launch.lineitems_url or context.lineitems_url
    session.add(context)
    statement = select(LtiResourceLink).where(
        LtiResourceLink.platform_id == platform.id, LtiResourceLink.link_id == launch.link_id
    )
    link = session.exec(statement).first() or LtiResourceLink(
        platform_id=platform.id, link_id=launch.link_id
    )
    link.class_id = klass.id
    link.lineitem_url = launch.lineitem_url or link.lineitem_url
    set_id = rules.set_of(where)
    if set_id is not None and link.assignment_id is None:
        given = select(Assignment).where(
            Assignment.class_id == klass.id, Assignment.set_id == set_id
        )
        assignment = session.exec(given.order_by(col(Assignment.due_at).desc())).first()
        link.assignment_id = assignment.id if assignment else None
    session.add(link)


def class_context(session: Session, klass: Klass) -> LtiContext:
    """The class's LMS course, or 404 for a class no launch has linked."""
    context = session.exec(select(LtiContext).where(LtiContext.class_id == klass.id)).first()
    if context is None:
        raise NotFound("This class is not linked to an LMS course: launch it from the LMS first.")
    return context

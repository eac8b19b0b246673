"""Scores and rosters between a class and its LMS course: the score outbox (filled in the
transaction that finishes an attempt, drained by a sender that never loses a row) and the
roster sync (NRPS). Only services commit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from sqlmodel import Session, col, select

from app.accounts.models import User
from app.classes import service as classes
from app.classes.models import Assignment, Klass, Membership
from app.db import begin_write
from app.errors import BadRequest
from app.lti import advantage, rules, service
from app.lti.models import LtiAccount, LtiContext, LtiPlatform, LtiResourceLink, LtiScoreOutbox

BATCH = 50  # rows one send takes; the rest wait for the next round
MAX_BACKOFF = timedelta(hours=1)


def enqueue_scores(session: Session, user_id: int, set_id: str, now: datetime) -> int:
    """Owe the LMS this learner's score for every linked assignment of this set: rows written
    in the caller's transaction (the one finishing the attempt), so a committed finish always
    has its row. Returns how many."""
    statement = (
        select(LtiResourceLink, LtiPlatform)
        .join(Assignment, col(Assignment.id) == col(LtiResourceLink.assignment_id))
        .join(Membership, col(Membership.class_id) == col(LtiResourceLink.class_id))
        .join(LtiPlatform, col(LtiPlatform.id) == col(LtiResourceLink.platform_id))
        .join(LtiAccount, col(LtiAccount.issuer) == col(LtiPlatform.issuer))
        .where(Assignment.set_id == set_id, Membership.user_id == user_id)
        .where(Membership.role == "learner", LtiAccount.user_id == user_id)
    )
    links = {link.id: link for link, _platform in session.exec(statement).all()}
    for link_id in links:
        assert link_id is not None
        session.add(
            LtiScoreOutbox(link_id=link_id, user_id=user_id, created_at=now, next_try_at=now)
        )
    return len(links)


def queue_class(session: Session, klass: Klass, now: datetime) -> int:
    """Owe the LMS every learner's score for every linked assignment of the class ("Send
    grades to the LMS"); returns how many rows."""
    assert klass.id is not None
    begin_write(session)
    links = session.exec(
        select(LtiResourceLink).where(
            LtiResourceLink.class_id == klass.id, col(LtiResourceLink.assignment_id).is_not(None)
        )
    ).all()
    learners = [
        member.user_id for member, _user in classes.members(session, klass.id)
        if member.role == "learner"
    ]  # fmt: skip
    owed = {
        (row.link_id, row.user_id)
        for row in session.exec(
            select(LtiScoreOutbox).where(col(LtiScoreOutbox.sent_at).is_(None))
        ).all()
    }  # a score already owed is sent once, not once more
    count = 0
    for link in links:
        assert link.id is not None
        for user_id in learners:
            if (link.id, user_id) in owed:
                continue
            session.add(
                LtiScoreOutbox(link_id=link.id, user_id=user_id, created_at=now, next_try_at=now)
            )
            count += 1
    session.commit()
    return count


@dataclass
class Sent:
    """What one round of sending did."""

    sent: int = 0
    failed: int = 0
    skipped: int = 0  # owed rows with nothing to send (no finished attempt, not an LMS user)


def send_due(session: Session, client: httpx.Client, now: datetime) -> Sent:
    """Send the owed scores that are due, each the score the learner's results page shows for
    the assignment (late rule included); a failure keeps the row and waits longer each time."""
    done = Sent()
    due = session.exec(
        select(LtiScoreOutbox)
        .where(col(LtiScoreOutbox.sent_at).is_(None), col(LtiScoreOutbox.next_try_at) <= now)
        .order_by(col(LtiScoreOutbox.id))
        .limit(BATCH)
    ).all()
    tokens: dict[int, str] = {}
    for row in due:
        # Read and send in a reader (no write lock held while the LMS answers), then write.
        try:
            score, lineitem = _send(session, client, row, tokens, now)
        except advantage.PlatformError as error:
            begin_write(session)
            row.tries += 1
            row.last_error = str(error)[:500]
            row.next_try_at = now + min(timedelta(seconds=10 * 2**row.tries), MAX_BACKOFF)
            done.failed += 1
        else:
            begin_write(session)
            if lineitem is not None:
                link = session.get(LtiResourceLink, row.link_id)
                assert link is not None
                link.lineitem_url = lineitem
                session.add(link)
            row.sent_at, row.score_sent = now, score
            done.sent += score is not None
            done.skipped += score is None
        session.add(row)
        session.commit()  # row by row: what was sent stays marked whatever happens next
    return done


def _send(
    session: Session,
    client: httpx.Client,
    row: LtiScoreOutbox,
    tokens: dict[int, str],
    now: datetime,
) -> tuple[float | None, str | None]:
    """Send one owed score; return it (None: nothing to send) and a line item made for it."""
    link = session.get(LtiResourceLink, row.link_id)
    user = session.get(User, row.user_id)
    assert link is not None and user is not None and link.platform_id is not None
    platform = session.get(LtiPlatform, link.platform_id)
    assignment = session.get(Assignment, link.assignment_id) if link.assignment_id else None
    assert platform is not None
    account = session.exec(
        select(LtiAccount).where(
            LtiAccount.issuer == platform.issuer, LtiAccount.user_id == user.id
        )
    ).first()
    score = classes.assignment_score(session, assignment, user) if assignment else None
    if account is None or score is None:
        return None, None
    if platform.id not in tokens:
        signing = service.tool_keys(session)
        if not signing:
            raise advantage.PlatformError("the tool has no key: run `ranklab lti rotate-key`")
        scopes = [rules.SCORE_SCOPE, rules.LINEITEM_SCOPE]
        assert platform.id is not None
        tokens[platform.id] = advantage.access_token(client, platform, signing[0], scopes, now)
    token = tokens[platform.id]
    lineitem, made = link.lineitem_url, None
    if lineitem is None:
        context = session.exec(
            select(LtiContext).where(LtiContext.class_id == link.class_id)
        ).first()
        if context is None or context.lineitems_url is None:
            raise advantage.PlatformError("the course's launches named no line items service")
        assert assignment is not None
        lineitem = made = advantage.lineitem_for(
            client, context.lineitems_url, token, link.link_id, assignment.title, assignment.set_id
        )
    advantage.post_score(client, lineitem, token, account.subject, score, now)
    return score, made


def sync_roster(session: Session, klass: Klass, client: httpx.Client, now: datetime) -> int:
    """Bring the LMS course's active members into the class (source "lti"; teachers as
    instructors), making accounts for new ones; returns how many members the LMS listed."""
    context = service.class_context(session, klass)
    if context.memberships_url is None:
        raise BadRequest("The LMS sent no roster service with its launches (NRPS is off).")
    platform = session.get(LtiPlatform, context.platform_id)
    signing = service.tool_keys(session)
    assert platform is not None
    try:
        if not signing:
            raise advantage.PlatformError("the tool has no key: run `ranklab lti rotate-key`")
        token = advantage.access_token(client, platform, signing[0], [rules.NRPS_SCOPE], now)
        listed = advantage.members(client, context.memberships_url, token)
    except advantage.PlatformError as error:
        raise BadRequest(f"The LMS roster could not be read ({error}).") from error
    begin_write(session)
    for member in listed:
        subject = member.get("user_id")
        if not isinstance(subject, str) or member.get("status", "Active") != "Active":
            continue
        name, email = member.get("name"), member.get("email")
        user = service.account_for(session, platform.issuer, subject, name, email, now)
        roles = [r for r in member.get("roles") or [] if isinstance(r, str)]
        role = "instructor" if rules.is_instructor(roles) else "learner"
        seen = {"name": name or "", "email": email or ""}
        seen["student_id"] = member.get("lis_person_sourcedid") or ""
        classes.enrol(session, klass, user, role, "lti", now, **seen)
    session.commit()
    return len(listed)

"""Classes in the database: create, join, roster, assignments, extensions, scores, gradebook.
Only services commit."""

from __future__ import annotations

import csv
import io
import secrets
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.accounts.models import User
from app.attempts import rules as attempt_rules
from app.attempts.models import ItemAttempt, SetAttempt
from app.classes import rules
from app.classes.models import Assignment, Extension, Klass, Membership
from app.db import begin_write
from app.errors import BadRequest, Conflict, Forbidden, NotFound

_hasher = PasswordHasher()


def create_class(session: Session, title: str, instructor: User, now: datetime) -> Klass:
    """Create a class with a fresh join code; its creator is its first instructor."""
    title = title.strip()
    if not 1 <= len(title) <= 200:
        raise BadRequest("A class needs a title of 1 to 200 characters.")
    assert instructor.id is not None
    begin_write(session)
    klass = Klass(
        title=title, join_code=rules.new_join_code(), created_by=instructor.id, created_at=now
    )
    session.add(klass)
    session.flush()
    assert klass.id is not None
    session.add(
        Membership(
            class_id=klass.id,
            user_id=instructor.id,
            role="instructor",
            source="staff",
            joined_at=now,
        )
    )
    session.commit()
    return klass


def class_by_code(session: Session, code: str) -> Klass:
    """The open class with this join code, or 404."""
    klass = session.exec(select(Klass).where(Klass.join_code == rules.normalise_code(code))).first()
    if klass is None or klass.archived:
        raise NotFound("No class has that code: check it with your instructor.")
    return klass


def join(session: Session, user: User, klass: Klass, source: str, now: datetime) -> Membership:
    """Make the user a learner of the class (idempotent). A guest joins as themselves and keeps
    the membership, and their progress, when they sign up: signing up upgrades the same row."""
    assert user.id is not None and klass.id is not None
    begin_write(session)
    found = membership(session, klass.id, user.id)
    if found is not None:
        return found
    member = Membership(class_id=klass.id, user_id=user.id, source=source, joined_at=now)
    session.add(member)
    try:
        session.commit()
    except IntegrityError:  # a double click joined first
        session.rollback()
        found = membership(session, klass.id, user.id)
        assert found is not None
        return found
    return member


def membership(session: Session, class_id: int, user_id: int) -> Membership | None:
    """The user's membership of the class, if any."""
    statement = select(Membership).where(
        Membership.class_id == class_id, Membership.user_id == user_id
    )
    return session.exec(statement).first()


def class_for_staff(session: Session, class_id: int, user: User) -> Klass:
    """A class its instructor (or an admin) may manage, or 404/403."""
    klass = session.get(Klass, class_id)
    if klass is None:
        raise NotFound("No such class.")
    assert user.id is not None
    member = membership(session, class_id, user.id)
    if user.role != "admin" and (member is None or member.role != "instructor"):
        raise Forbidden("Only this class's instructors may manage it.")
    return klass


def classes_of(session: Session, user: User) -> list[Klass]:
    """The classes the user belongs to, newest first."""
    statement = (
        select(Klass)
        .join(Membership, col(Membership.class_id) == col(Klass.id))
        .where(Membership.user_id == user.id)
        .order_by(col(Klass.id).desc())
    )
    return list(session.exec(statement).all())


def members(session: Session, class_id: int) -> list[tuple[Membership, User]]:
    """The class's members with their accounts, in join order."""
    statement = (
        select(Membership, User)
        .join(User, col(User.id) == col(Membership.user_id))
        .where(Membership.class_id == class_id)
        .order_by(col(Membership.id))
    )
    return [(m, u) for m, u in session.exec(statement).all()]


@dataclass(frozen=True)
class RosterResult:
    """What a roster upload did: per row, the account and a first password for new ones."""

    added: list[tuple[str, str | None]]  # (username, one-time password or None: existing)
    errors: list[str]


def upload_roster(session: Session, klass: Klass, text: str, now: datetime) -> RosterResult:
    """Add every roster row to the class, creating accounts with a one-time password for the
    instructor to hand out; a bad row refuses the whole upload (nothing half done)."""
    reader = csv.DictReader(io.StringIO(text))
    headers = {(name or "").strip().lower() for name in reader.fieldnames or []}
    if not headers & {"email", "username"}:
        raise BadRequest(
            "The roster needs an 'email' or 'username' column (and may have 'student id', 'name')."
        )
    rows, errors = rules.roster_rows(list(reader))
    if errors:
        return RosterResult([], errors)
    assert klass.id is not None
    begin_write(session)
    added: list[tuple[str, str | None]] = []
    for row in rows:
        user = session.exec(select(User).where(User.username == row.username)).first()
        password = None
        if user is None:
            password = secrets.token_urlsafe(9)
            user = User(
                username=row.username,
                password_hash=_hasher.hash(password),
                is_guest=False,
                created_at=now,
            )
            session.add(user)
            session.flush()
        assert user.id is not None
        if membership(session, klass.id, user.id) is None:
            session.add(
                Membership(
                    class_id=klass.id,
                    user_id=user.id,
                    source="roster",
                    student_id=row.student_id,
                    email=row.email,
                    name=row.name,
                    joined_at=now,
                )
            )
        added.append((row.username, password))
    try:
        session.commit()
    except IntegrityError as error:  # an account took a name meanwhile: nothing was saved
        session.rollback()
        raise Conflict("A username in the roster was taken meanwhile; upload it again.") from error
    return RosterResult(added, [])


def add_assignment(
    session: Session,
    klass: Klass,
    set_id: str,
    title: str,
    window: rules.Window,
    attempt_limit: int | None,
    late_penalty_per_day: float,
) -> Assignment:
    """Give a set to the class with its dates, attempt limit and late rule."""
    if not window.open_at <= window.due_at <= window.close_at:
        raise BadRequest("The dates must come in order: opens, then due, then closes.")
    if attempt_limit is not None and attempt_limit < 1:
        raise BadRequest("An attempt limit must be at least 1 (or left empty for no limit).")
    if not 0 <= late_penalty_per_day <= 100:
        raise BadRequest("The late penalty is a percentage a day, from 0 to 100.")
    assert klass.id is not None
    begin_write(session)
    assignment = Assignment(
        class_id=klass.id,
        set_id=set_id,
        title=title,
        open_at=window.open_at,
        due_at=window.due_at,
        close_at=window.close_at,
        attempt_limit=attempt_limit,
        late_penalty_per_day=late_penalty_per_day,
    )
    session.add(assignment)
    session.commit()
    return assignment


def assignments(session: Session, class_id: int) -> list[Assignment]:
    """The class's assignments by due date."""
    statement = (
        select(Assignment).where(Assignment.class_id == class_id).order_by(col(Assignment.due_at))
    )
    return list(session.exec(statement).all())


def grant_extension(
    session: Session,
    assignment: Assignment,
    user_id: int,
    time_multiplier: float | None,
    due_at: datetime | None,
    close_at: datetime | None,
) -> Extension:
    """Give one learner extra time per question and/or later dates for one assignment."""
    if time_multiplier is not None and not 1 <= time_multiplier <= 10:
        raise BadRequest("The time multiplier must be from 1 to 10 (or untimed).")
    if membership(session, assignment.class_id, user_id) is None:
        raise BadRequest("That learner is not in this class.")
    assert assignment.id is not None
    begin_write(session)
    statement = select(Extension).where(
        Extension.assignment_id == assignment.id, Extension.user_id == user_id
    )
    extension = session.exec(statement).first() or Extension(
        assignment_id=assignment.id, user_id=user_id
    )
    extension.time_multiplier, extension.due_at, extension.close_at = (
        time_multiplier,
        due_at,
        close_at,
    )
    window = window_for(assignment, extension)
    if not window.open_at <= window.due_at <= window.close_at:
        raise BadRequest("The extended dates must come in order: due, then closes.")
    session.add(extension)
    session.commit()
    return extension


def extension_of(session: Session, assignment: Assignment, user_id: int) -> Extension | None:
    """The learner's extension for the assignment, if any."""
    statement = select(Extension).where(
        Extension.assignment_id == assignment.id, Extension.user_id == user_id
    )
    return session.exec(statement).first()


def window_for(assignment: Assignment, extension: Extension | None) -> rules.Window:
    """The assignment's dates as one learner has them."""
    due = extension.due_at if extension and extension.due_at else assignment.due_at
    close = extension.close_at if extension and extension.close_at else assignment.close_at
    return rules.Window(assignment.open_at, due, max(close, due))


def assignment_for(session: Session, user_id: int, set_id: str) -> Assignment | None:
    """The assignment of this set in one of the learner's classes, the latest due first."""
    statement = (
        select(Assignment)
        .join(Membership, col(Membership.class_id) == col(Assignment.class_id))
        .where(
            Membership.user_id == user_id, Membership.role == "learner", Assignment.set_id == set_id
        )
        .order_by(col(Assignment.due_at).desc())
    )
    return session.exec(statement).first()


def _attempts(session: Session, assignment: Assignment, user_id: int) -> list[SetAttempt]:
    statement = (
        select(SetAttempt)
        .where(SetAttempt.user_id == user_id, SetAttempt.set_id == assignment.set_id)
        .where(col(SetAttempt.started_at) >= assignment.open_at)
        .order_by(col(SetAttempt.id))
    )
    return list(session.exec(statement).all())


def start_check(
    session: Session, user_id: int, set_id: str, now: datetime, multiplier: float | None
) -> float | None:
    """Refuse (409) a start outside the learner's window or past the attempt limit; return the
    time multiplier the attempt gets (the assignment's extension wins over the account's)."""
    assignment = assignment_for(session, user_id, set_id)
    if assignment is None:
        return multiplier
    extension = extension_of(session, assignment, user_id)
    started = _attempts(session, assignment, user_id)
    if any(attempt.finished_at is None for attempt in started):  # resuming is not starting
        return _more_time(multiplier, extension)
    refusal = rules.start_refusal(
        window_for(assignment, extension), now, len(started), assignment.attempt_limit
    )
    if refusal is not None:
        raise Conflict(refusal)
    return _more_time(multiplier, extension)


def _more_time(account: float | None, extension: Extension | None) -> float | None:
    """The more generous of the account's accommodation and the assignment's extension (None:
    untimed), so an extension that only moves dates never takes an accommodation away."""
    if extension is None:
        return account
    if account is None or extension.time_multiplier is None:
        return None
    return max(account, extension.time_multiplier)


def assignment_score(session: Session, assignment: Assignment, user: User) -> float | None:
    """The one score a results page shows for the assignment: the best finished attempt's
    percentage under the late rule (None: no finished attempt). The late factor uses the
    learner's own dates (an extension moves them)."""
    assert user.id is not None
    window = window_for(assignment, extension_of(session, assignment, user.id))
    best: float | None = None
    for attempt in _attempts(session, assignment, user.id):
        if attempt.finished_at is None:
            continue
        items = session.exec(
            select(ItemAttempt).where(ItemAttempt.set_attempt_id == attempt.id)
        ).all()
        percent = attempt_rules.score((row.status, row.attempts_used) for row in items).percent
        counted = percent * rules.late_factor(
            window, attempt.finished_at, assignment.late_penalty_per_day
        )
        best = counted if best is None else max(best, counted)
    return best


def _learners(session: Session, class_id: int) -> list[tuple[Membership, User]]:
    return [(m, u) for m, u in members(session, class_id) if m.role == "learner"]


def gradebook_csv(session: Session, klass: Klass, flavour: str) -> str:
    """The class's scores as CSV for Canvas's or Moodle's grade import (one row a learner)."""
    assert klass.id is not None
    given = assignments(session, klass.id)
    out = io.StringIO()
    writer = csv.writer(out)
    learners = _learners(session, klass.id)
    if flavour == "canvas":
        writer.writerow(
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
            + [f"{a.title} ({a.id})" for a in given]
        )
        writer.writerow(["Points Possible", "", "", "", ""] + ["100"] * len(given))
        for member, user in learners:
            scores = [_shown(assignment_score(session, a, user)) for a in given]
            writer.writerow(
                [
                    member.name or user.display_name,
                    "",
                    member.student_id or "",
                    member.email or user.username or "",
                    klass.title,
                    *scores,
                ]
            )
    elif flavour == "moodle":
        writer.writerow(["email", "idnumber", "username"] + [a.title for a in given])
        for member, user in learners:
            scores = [_shown(assignment_score(session, a, user)) for a in given]
            writer.writerow(
                [member.email or "", member.student_id or "", user.username or "", *scores]
            )
    else:
        raise BadRequest("The gradebook comes as 'canvas' or 'moodle'.")
    return out.getvalue()


def _shown(score: float | None) -> str:
    """A score as the gradebook writes it: whole when whole, else to one decimal place."""
    if score is None:
        return ""
    return str(int(score)) if score == int(score) else f"{score:.1f}"


def class_for_lti_context(
    session: Session,
    issuer: str,
    deployment_id: str,
    context_id: str,
    title: str,
    creator: User,
    now: datetime,
    join_code: str | None = None,
) -> Klass:
    """The class an LMS course (context) launches into (the caller commits): the one linked to
    it; else the class whose join code the link names (custom class=CODE), linked now if it is
    linked to no course yet; else a new class titled as the course. Part of the caller's
    transaction: the launch that links it also joins the learner."""
    linked = select(Klass).where(
        Klass.lti_platform_issuer == issuer,
        Klass.lti_deployment_id == deployment_id,
        Klass.lti_context_id == context_id,
    )
    klass = session.exec(linked).first()
    if klass is not None:
        return klass
    named = None
    if join_code:
        code = rules.normalise_code(join_code)
        named = session.exec(select(Klass).where(Klass.join_code == code)).first()
    if named is not None and named.lti_context_id is None:
        klass = named
    else:
        assert creator.id is not None
        klass = Klass(
            title=(title.strip() or "Course")[:200],
            join_code=rules.new_join_code(),
            created_by=creator.id,
            created_at=now,
        )
    klass.lti_platform_issuer, klass.lti_deployment_id = issuer, deployment_id
    klass.lti_context_id = context_id
    session.add(klass)
    session.flush()
    return klass


def enrol(
    session: Session, klass: Klass, user: User, role: str, source: str, now: datetime, **seen: str
) -> Membership:
    """Make the user a member with this role (the caller commits); an existing member keeps
    their row, and becomes an instructor when the LMS says they teach. `seen`: the name,
    email and student id the LMS gives, kept for the gradebook."""
    assert user.id is not None and klass.id is not None
    member = membership(session, klass.id, user.id) or Membership(
        class_id=klass.id, user_id=user.id, source=source, joined_at=now
    )
    if role == "instructor":
        member.role = "instructor"
    for name in ("name", "email", "student_id"):
        if seen.get(name):
            setattr(member, name, seen[name])
    session.add(member)
    return member

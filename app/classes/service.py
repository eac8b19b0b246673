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
from app.challenges.catalog import Catalog
from app.classes import rules
from app.classes.models import (
    Assignment,
    ClassGroup,
    Extension,
    GroupExtension,
    GroupMember,
    Klass,
    Membership,
)
from app.db import begin_write
from app.errors import BadRequest, Conflict, Forbidden, NotFound
from app.labs.models import LabStepState
from app.lessons.models import CHECK, LessonProgress

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
    topic_id: str | None = None,
) -> Assignment:
    """Give a set (or, with topic_id and set_id "", a whole topic) to the class with its
    dates, attempt limit and late rule."""
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
        topic_id=topic_id,
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


def window_for(
    assignment: Assignment, extension: Extension | rules.Allowance | None
) -> rules.Window:
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


def attempts_since_open(
    session: Session, assignment: Assignment, user_id: int, set_id: str | None = None
) -> list[SetAttempt]:
    """The learner's timed attempts at the set (the assignment's by default) since it opened."""
    statement = (
        select(SetAttempt)
        .where(SetAttempt.user_id == user_id, SetAttempt.set_id == (set_id or assignment.set_id))
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
    granted = allowance_for(session, assignment, user_id)
    started = attempts_since_open(session, assignment, user_id)
    if any(attempt.finished_at is None for attempt in started):  # resuming is not starting
        return rules.more_time(multiplier, granted)
    refusal = rules.start_refusal(
        window_for(assignment, granted), now, len(started), assignment.attempt_limit
    )
    if refusal is not None:
        raise Conflict(refusal)
    return rules.more_time(multiplier, granted)


def assignment_score(
    session: Session, assignment: Assignment, user: User, catalog: Catalog | None = None
) -> float | None:
    """The one score a results page shows for the assignment: the best finished attempt's
    percentage under the late rule (None: no finished attempt). The late factor uses the
    learner's own dates (their extension, or their groups', moves them). A topic assignment's
    score is rules.TOPIC_SCORE_WORDS; it needs the catalog (what the topic has)."""
    assert user.id is not None
    window = window_for(assignment, allowance_for(session, assignment, user.id))
    if assignment.topic_id is not None:
        if catalog is None:
            raise ValueError("a topic assignment's score needs the catalog")
        return topic_standing(session, catalog, assignment, user.id, window).score
    best: float | None = None
    for attempt, percent in finished_scores(session, assignment, user.id, assignment.set_id):
        assert attempt.finished_at is not None
        counted = percent * rules.late_factor(
            window, attempt.finished_at, assignment.late_penalty_per_day
        )
        best = counted if best is None else max(best, counted)
    return best


@dataclass(frozen=True)
class TopicStanding:
    """A learner's work on a topic assignment: its scored parts and their timed attempts."""

    parts: list[rules.TopicPart]
    attempts: list[SetAttempt]

    @property
    def score(self) -> float | None:
        """The topic's score (rules.TOPIC_SCORE_WORDS)."""
        return rules.topic_score(self.parts)


def topic_standing(
    session: Session, catalog: Catalog, assignment: Assignment, user_id: int, window: rules.Window
) -> TopicStanding:
    """Score each part of the assignment's topic from the learner's work since it opened."""
    topic = catalog.topic(assignment.topic_id or "")
    if topic is None:
        return TopicStanding([], [])
    opened, penalty = assignment.open_at, assignment.late_penalty_per_day

    def late(moment: datetime) -> float:
        return rules.late_factor(window, moment, penalty)

    parts: list[rules.TopicPart] = []
    if topic.loaded_topic is not None and topic.loaded_topic.topic.lesson is not None:
        rows = session.exec(
            select(LessonProgress).where(
                LessonProgress.user_id == user_id, LessonProgress.topic_id == topic.id
            )
        ).all()
        passed = next(
            (r.completed_at for r in rows if r.step == CHECK and r.completed_at is not None), None
        )
        passed = passed if passed is not None and passed >= opened else None
        started = any(row.answered_at >= opened for row in rows)
        score = 100.0 * late(passed) if passed else 0.0
        parts.append(rules.TopicPart("Lesson", score, started, passed))
    if topic.labs:
        wanted = {(loaded.lab.id, step.id) for loaded in topic.labs for step in loaded.lab.steps}
        states = [
            state
            for state in session.exec(
                select(LabStepState).where(
                    LabStepState.user_id == user_id,
                    col(LabStepState.lab_id).in_({lab for lab, _ in wanted}),
                )
            ).all()
            if (state.lab_id, state.step_id) in wanted
        ]
        passes = [s.passed_at for s in states if s.passed_at is not None and s.passed_at >= opened]
        score = 100.0 * sum(late(moment) for moment in passes) / len(wanted)
        started = any(state.updated_at >= opened for state in states)
        complete = max(passes) if len(passes) == len(wanted) else None
        parts.append(rules.TopicPart("Labs", score, started, complete))
    attempts: list[SetAttempt] = []
    for facts in topic.sets:
        tried = attempts_since_open(session, assignment, user_id, facts.set.id)
        attempts.extend(tried)
        scored = finished_scores(session, assignment, user_id, facts.set.id)
        best = max(
            (
                percent * late(attempt.finished_at)
                for attempt, percent in scored
                if attempt.finished_at
            ),
            default=0.0,
        )
        first = min((a.finished_at for a, _ in scored if a.finished_at), default=None)
        parts.append(rules.TopicPart(facts.set.title, best, bool(tried), first))
    return TopicStanding(parts, attempts)


def attempt_items(session: Session, attempt_id: int) -> list[ItemAttempt]:
    """An attempt's questions in order."""
    statement = (
        select(ItemAttempt)
        .where(ItemAttempt.set_attempt_id == attempt_id)
        .order_by(col(ItemAttempt.position))
    )
    return list(session.exec(statement).all())


def finished_scores(
    session: Session, assignment: Assignment, user_id: int, set_id: str
) -> list[tuple[SetAttempt, float]]:
    """The learner's finished attempts at the set since the assignment opened, each with the
    percentage its results page shows."""
    found: list[tuple[SetAttempt, float]] = []
    for attempt in attempts_since_open(session, assignment, user_id, set_id):
        if attempt.finished_at is None or attempt.id is None:
            continue
        items = attempt_items(session, attempt.id)
        found.append(
            (attempt, attempt_rules.score((row.status, row.attempts_used) for row in items).percent)
        )
    return found


def allowance_for(session: Session, assignment: Assignment, user_id: int) -> rules.Allowance | None:
    """The learner's exception for the assignment: their own extension, else their groups'."""
    own = extension_of(session, assignment, user_id)
    statement = (
        select(GroupExtension, ClassGroup)
        .join(ClassGroup, col(ClassGroup.id) == col(GroupExtension.group_id))
        .join(GroupMember, col(GroupMember.group_id) == col(ClassGroup.id))
        .where(GroupExtension.assignment_id == assignment.id, GroupMember.user_id == user_id)
    )
    return rules.allowance(
        None if own is None else _allowance(own, "own"),
        [_allowance(given, group.name) for given, group in session.exec(statement).all()],
    )


def _allowance(given: Extension | GroupExtension, source: str) -> rules.Allowance:
    return rules.Allowance(given.time_multiplier, given.due_at, given.close_at, source)


def create_group(session: Session, klass: Klass, name: str, user_ids: list[int]) -> ClassGroup:
    """Make a named group of the class's learners."""
    name = name.strip()
    if not 1 <= len(name) <= 100:
        raise BadRequest("A group needs a name of 1 to 100 characters.")
    assert klass.id is not None
    for user_id in user_ids:
        if membership(session, klass.id, user_id) is None:
            raise BadRequest("Everyone in a group must be in this class.")
    begin_write(session)
    group = ClassGroup(class_id=klass.id, name=name)
    session.add(group)
    try:
        session.flush()
    except IntegrityError as error:
        session.rollback()
        raise Conflict(f"This class has a group called {name!r} already.") from error
    assert group.id is not None
    for user_id in sorted(set(user_ids)):
        session.add(GroupMember(group_id=group.id, user_id=user_id))
    session.commit()
    return group


def add_to_group(session: Session, group: ClassGroup, user_id: int) -> None:
    """Put one of the class's learners in the group (idempotent)."""
    if membership(session, group.class_id, user_id) is None:
        raise BadRequest("That learner is not in this class.")
    begin_write(session)
    statement = select(GroupMember).where(
        GroupMember.group_id == group.id, GroupMember.user_id == user_id
    )
    if session.exec(statement).first() is None:
        assert group.id is not None
        session.add(GroupMember(group_id=group.id, user_id=user_id))
        session.commit()


def groups(session: Session, class_id: int) -> list[tuple[ClassGroup, list[User]]]:
    """The class's groups by name, each with its members."""
    found = session.exec(
        select(ClassGroup).where(ClassGroup.class_id == class_id).order_by(col(ClassGroup.name))
    ).all()
    result = []
    for group in found:
        people = session.exec(
            select(User)
            .join(GroupMember, col(GroupMember.user_id) == col(User.id))
            .where(GroupMember.group_id == group.id)
            .order_by(col(User.id))
        ).all()
        result.append((group, list(people)))
    return result


def grant_group_extension(
    session: Session,
    assignment: Assignment,
    group: ClassGroup,
    time_multiplier: float | None,
    due_at: datetime | None,
    close_at: datetime | None,
) -> GroupExtension:
    """Give a group extra time per question and/or later dates for one assignment."""
    if group.class_id != assignment.class_id:
        raise BadRequest("That group is not in this class.")
    if time_multiplier is not None and not 1 <= time_multiplier <= 10:
        raise BadRequest("The time multiplier must be from 1 to 10 (or untimed).")
    window = window_for(assignment, rules.Allowance(time_multiplier, due_at, close_at, "group"))
    if not window.open_at <= window.due_at <= window.close_at:
        raise BadRequest("The extended dates must come in order: due, then closes.")
    assert assignment.id is not None and group.id is not None
    begin_write(session)
    statement = select(GroupExtension).where(
        GroupExtension.assignment_id == assignment.id, GroupExtension.group_id == group.id
    )
    given = session.exec(statement).first() or GroupExtension(
        assignment_id=assignment.id, group_id=group.id
    )
    given.time_multiplier, given.due_at, given.close_at = time_multiplier, due_at, close_at
    session.add(given)
    session.commit()
    return given


def _learners(session: Session, class_id: int) -> list[tuple[Membership, User]]:
    return [(m, u) for m, u in members(session, class_id) if m.role == "learner"]


def gradebook_csv(
    session: Session, klass: Klass, flavour: str, catalog: Catalog | None = None
) -> str:
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
            scores = [shown(assignment_score(session, a, user, catalog)) for a in given]
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
            scores = [shown(assignment_score(session, a, user, catalog)) for a in given]
            writer.writerow(
                [member.email or "", member.student_id or "", user.username or "", *scores]
            )
    else:
        raise BadRequest("The gradebook comes as 'canvas' or 'moodle'.")
    return out.getvalue()


def shown(score: float | None) -> str:
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

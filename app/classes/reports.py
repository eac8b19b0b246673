"""Read what classes show: the instructor's per-assignment view (and its CSV) and the due dates
beside each assigned set and topic on the learner's pages. Reads only (only services commit)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from sqlalchemy import bindparam
from sqlalchemy import select as select_columns
from sqlmodel import Session, col

from app import reads
from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.classes import rules, service
from app.classes.models import (
    Assignment,
    ClassGroup,
    Extension,
    GroupExtension,
    GroupMember,
    Membership,
)


@dataclass(frozen=True)
class LearnerRow:
    """One learner's line in the per-assignment view: the same score their results page and
    the gradebook carry."""

    member: Membership
    user: User
    status: rules.Status
    attempts_used: int
    score: float | None
    late_factor: float | None  # of the counted work (None: nothing counted yet)
    allowance: rules.Allowance | None
    finished: list[tuple[int, float, datetime]]  # (attempt id, its results page's %, when)


def assignment_rows(
    session: Session, catalog: Catalog, assignment: Assignment, now: datetime
) -> list[LearnerRow]:
    """Every learner of the assignment's class, sorted by status (those that need the
    instructor first), then by name."""
    rows = []
    for member, user in service.members(session, assignment.class_id):
        if member.role != "learner":
            continue
        rows.append(learner_row(session, catalog, assignment, member, user, now))
    order = {status: index for index, status in enumerate(rules.STATUS_ORDER)}
    return sorted(rows, key=lambda row: (order[row.status], name_of(row).casefold()))


def learner_row(
    session: Session,
    catalog: Catalog,
    assignment: Assignment,
    member: Membership,
    user: User,
    now: datetime,
) -> LearnerRow:
    """One learner's status, attempts, score and late factor for the assignment."""
    assert user.id is not None
    granted = service.allowance_for(session, assignment, user.id)
    window = service.window_for(assignment, granted)
    penalty = assignment.late_penalty_per_day
    score = service.assignment_score(session, assignment, user, catalog)
    if assignment.topic_id is not None:
        standing = service.topic_standing(session, catalog, assignment, user.id, window)
        tried = standing.attempts
        submitted = rules.topic_submitted_at(standing.parts)
        started = any(part.started for part in standing.parts)
        factor = None if submitted is None else rules.late_factor(window, submitted, penalty)
        topic = catalog.topic(assignment.topic_id)
        scored = [
            pair
            for facts in (topic.sets if topic is not None else ())
            for pair in service.finished_scores(session, assignment, user.id, facts.set.id)
        ]
    else:
        tried = service.attempts_since_open(session, assignment, user.id)
        scored = service.finished_scores(session, assignment, user.id, assignment.set_id)
        submitted = min((a.finished_at for a, _ in scored if a.finished_at), default=None)
        started = bool(tried)
        counted = [
            (percent * rules.late_factor(window, a.finished_at, penalty), a)
            for a, percent in scored
            if a.finished_at is not None
        ]
        best = max(counted, key=lambda pair: pair[0], default=None)
        factor = (
            None
            if best is None or best[1].finished_at is None
            else rules.late_factor(window, best[1].finished_at, penalty)
        )
    finished = [
        (attempt.id, percent, attempt.finished_at)
        for attempt, percent in scored
        if attempt.id is not None and attempt.finished_at is not None
    ]
    return LearnerRow(
        member,
        user,
        rules.status(window, now, started, submitted),
        len(tried),
        score,
        factor,
        granted,
        finished,
    )


def name_of(row: LearnerRow) -> str:
    """How the view names a learner: the roster's name, else their account's."""
    return row.member.name or row.user.display_name


def allowance_text(granted: rules.Allowance | None, zone: tzinfo) -> str:
    """An exception in words: whose it is, its multiplier and dates (in the reader's zone)."""
    if granted is None:
        return ""
    words = ["own" if not granted.from_groups else granted.source]
    if granted.time_multiplier is None:
        words.append("untimed")
    elif granted.time_multiplier != 1:
        words.append(f"time ×{granted.time_multiplier:g}")
    if granted.due_at is not None:
        words.append(f"due {granted.due_at.astimezone(zone):%a %d %b %H:%M}")
    if granted.close_at is not None:
        words.append(f"closes {granted.close_at.astimezone(zone):%a %d %b %H:%M}")
    return ", ".join(words)


def score_rule(assignment: Assignment) -> str:
    """How the assignment's score is computed, in the words every page and the CSV use."""
    if assignment.topic_id is not None:
        return rules.TOPIC_SCORE_WORDS + " " + rules.LATE_RULE_WORDS
    return rules.SET_SCORE_WORDS + " " + rules.LATE_RULE_WORDS


def assignment_csv(rows: Sequence[LearnerRow], assignment: Assignment, zone: tzinfo) -> str:
    """The per-assignment view as CSV: one row a learner, the view's numbers."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "Learner",
            "Username",
            "Student id",
            "Status",
            "Attempts used",
            "Score",
            "Late factor",
            "Extension",
            "Score rule",
        ]
    )
    for row in rows:
        writer.writerow(
            [
                name_of(row),
                row.user.username or "",
                row.member.student_id or "",
                row.status.value,
                row.attempts_used,
                service.shown(row.score),
                "" if row.late_factor is None else f"{row.late_factor:g}",
                allowance_text(row.allowance, zone),
                score_rule(assignment),
            ]
        )
    return out.getvalue()


# Due dates on the learner's pages -------------------------------------------------------------


@dataclass(frozen=True)
class Due:
    """An assigned set's or topic's due date as one learner has it, in words."""

    text: str  # "due Friday 17:00", "overdue, was due Fri 27 Nov 17:00", "closed, ..."
    state: rules.DueState
    due_at: datetime


_ASSIGNMENTS = Assignment.__table__.columns  # type: ignore[attr-defined]
_ASSIGNED = reads.Query(
    select_columns(*_ASSIGNMENTS)
    .join(Membership, col(Membership.class_id) == _ASSIGNMENTS.class_id)
    .where(col(Membership.user_id) == bindparam("user_id"), col(Membership.role) == "learner"),
    Assignment,
)
_OWN = reads.Query(
    select_columns(*Extension.__table__.columns).where(  # type: ignore[attr-defined]
        col(Extension.user_id) == bindparam("user_id")
    ),
    Extension,
)
_GROUPS = reads.Query(
    select_columns(
        *GroupExtension.__table__.columns,  # type: ignore[attr-defined]
        *ClassGroup.__table__.columns,  # type: ignore[attr-defined]
    )
    .join(ClassGroup, col(ClassGroup.id) == col(GroupExtension.group_id))
    .join(GroupMember, col(GroupMember.group_id) == col(ClassGroup.id))
    .where(col(GroupMember.user_id) == bindparam("user_id")),
    GroupExtension,
    ClassGroup,
)


def dues(reader: reads.Reader, user_id: int, now: datetime, zone: tzinfo) -> dict[str, Due]:
    """The learner's due dates keyed "set:<id>" and "topic:<id>" (one query for a learner in
    no class, three otherwise). Where two classes assign the same thing, the soonest still
    open counts, else the last."""
    assigned = [row[0] for row in map(_ASSIGNED.instances, reader.rows(_ASSIGNED, user_id=user_id))]
    if not assigned:
        return {}
    own = {
        extension.assignment_id: extension
        for (extension,) in map(_OWN.instances, reader.rows(_OWN, user_id=user_id))
    }
    by_assignment: dict[int, list[rules.Allowance]] = {}
    for given, group in map(_GROUPS.instances, reader.rows(_GROUPS, user_id=user_id)):
        by_assignment.setdefault(given.assignment_id, []).append(
            rules.Allowance(given.time_multiplier, given.due_at, given.close_at, group.name)
        )
    found: dict[str, Due] = {}
    for assignment in assigned:
        mine = own.get(assignment.id)
        granted = rules.allowance(
            None
            if mine is None
            else rules.Allowance(mine.time_multiplier, mine.due_at, mine.close_at, "own"),
            by_assignment.get(assignment.id or 0, []),
        )
        window = service.window_for(assignment, granted)
        state = rules.due_state(window, now)
        due = Due(rules.due_text(window, now, zone), state, window.due_at)
        key = f"topic:{assignment.topic_id}" if assignment.topic_id else f"set:{assignment.set_id}"
        if key not in found or _sooner(due, found[key]):
            found[key] = due
    return found


def _sooner(one: Due, other: Due) -> bool:
    """Whether `one` should be shown rather than `other`: open beats closed, then the sooner."""
    one_open = one.state is not rules.DueState.CLOSED
    other_open = other.state is not rules.DueState.CLOSED
    if one_open != other_open:
        return one_open
    return one.due_at < other.due_at if one_open else one.due_at > other.due_at


def by_topic(found: Mapping[str, Due], catalog: Catalog) -> dict[str, Due]:
    """Per topic, its own assignment's due date, else the one of its sets that counts."""
    result: dict[str, Due] = {}
    for topic in catalog.topics():
        candidates = [
            found[f"set:{facts.set.id}"] for facts in topic.sets if f"set:{facts.set.id}" in found
        ]
        if f"topic:{topic.id}" in found:
            candidates = [found[f"topic:{topic.id}"]]
        for due in candidates:
            if topic.id not in result or _sooner(due, result[topic.id]):
                result[topic.id] = due
    return result


@dataclass(frozen=True)
class AttemptReview:
    """One finished attempt as the instructor reviews it: its results page's score, the late
    factor for when it finished, and each question's outcome and tries."""

    attempt_id: int
    set_id: str
    finished_at: datetime
    percent: float
    late_factor: float
    questions: list[tuple[int, str, str, int]]  # (number, title, status, tries)


def attempt_reviews(
    session: Session, catalog: Catalog, assignment: Assignment, user_id: int
) -> list[AttemptReview]:
    """The learner's finished attempts that count toward the assignment, oldest first."""
    window = service.window_for(assignment, service.allowance_for(session, assignment, user_id))
    topic = catalog.topic(assignment.topic_id) if assignment.topic_id else None
    set_ids = [f.set.id for f in topic.sets] if topic is not None else [assignment.set_id]
    reviews = []
    for set_id in set_ids:
        for attempt, percent in service.finished_scores(session, assignment, user_id, set_id):
            assert attempt.id is not None and attempt.finished_at is not None
            questions = []
            for row in service.attempt_items(session, attempt.id):
                found = catalog.item(set_id, row.item_id, attempt.content_version)
                title = found[1].title if found is not None else row.item_id
                questions.append((row.position + 1, title, row.status.value, row.attempts_used))
            factor = rules.late_factor(window, attempt.finished_at, assignment.late_penalty_per_day)
            reviews.append(
                AttemptReview(attempt.id, set_id, attempt.finished_at, percent, factor, questions)
            )
    return sorted(reviews, key=lambda review: review.finished_at)

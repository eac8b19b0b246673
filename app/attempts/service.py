"""Attempts in the database: start, answer, hint, time out, advance, finish. Only services commit.

Integrity lives here: every write that counts an attempt is one conditional UPDATE, so parallel
submissions for one question can never use more attempts than allowed (on SQLite and PostgreSQL).
Every function that writes begins a writer transaction first (app.db.begin_write): pages read
without SQLite's write lock, and a read may not turn into a write halfway (SQLITE_BUSY).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Insert, Update, and_, bindparam, case, func, insert, literal, or_, update
from sqlalchemy import select as select_columns
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select

from app import reads
from app.attempts import rules, sightings
from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.attempts.rules import Clock, ItemStatus, Refusal
from app.challenges.catalog import Catalog
from app.challenges.schema import ChallengeSet, ItemBase
from app.db import begin_write
from app.errors import BadRequest, Conflict, NotFound
from app.lti import grades as lti_grades


@dataclass(frozen=True)
class Judgement:
    """What happened to one submitted answer."""

    correct: bool
    status: ItemStatus
    attempts_left: int
    answer: str
    replayed: bool = False  # the same submission came again: this is its first outcome


def clock(item_attempt: ItemAttempt, grace_s: float) -> Clock:
    """Build the rules' clock from the row the server wrote."""
    assert item_attempt.started_at is not None
    return Clock(item_attempt.started_at, item_attempt.time_limit_s, grace_s)


def active_attempt(session: Session, user_id: int, set_id: str) -> SetAttempt | None:
    """Return the user's unfinished attempt at a set, if any."""
    statement = (
        select(SetAttempt)
        .where(SetAttempt.user_id == user_id, SetAttempt.set_id == set_id)
        .where(col(SetAttempt.finished_at).is_(None))
        .order_by(col(SetAttempt.id).desc())
    )
    return session.exec(statement).first()


def start_or_resume(
    session: Session,
    user_id: int,
    challenge_set: ChallengeSet,
    now: datetime,
    time_multiplier: float | None = 1.0,
    content_version: str | None = None,
    *,
    new_user: bool = False,
    offer: sightings.Offer = sightings.EVERY,
) -> SetAttempt:
    """Resume the user's unfinished attempt at the set, or start one and open its first item
    (the attempt keeps the set's version, by content hash, to the end). `new_user`: the user
    was made in this transaction (accounts.write_guest), so has no attempt to look for.
    `offer`: the variants a question may show (the proven ones)."""
    begin_write(session)
    existing = None if new_user else active_attempt(session, user_id, challenge_set.id)
    if existing is not None:
        return existing
    try:
        return _start(session, user_id, challenge_set, now, time_multiplier, content_version, offer)
    except IntegrityError:
        # A parallel request (a double click) started one first and the unique index on
        # unfinished attempts refused ours: resume theirs, which is committed by now.
        session.rollback()
        existing = active_attempt(session, user_id, challenge_set.id)
        if existing is None:  # not that race after all
            raise
        return existing


def _start(
    session: Session,
    user_id: int,
    challenge_set: ChallengeSet,
    now: datetime,
    time_multiplier: float | None,
    content_version: str | None = None,
    offer: sightings.Offer = sightings.EVERY,
) -> SetAttempt:
    """Insert a new attempt with its questions and open the first one; each question draws a
    variant `offer` allows that the learner has not been shown."""
    attempt = SetAttempt(
        user_id=user_id,
        set_id=challenge_set.id,
        content_version=content_version,
        set_title=challenge_set.title,
        item_ids=",".join(item.id for item in challenge_set.items),
        started_at=now,
    )
    # Through the session's connection, as the questions below: the ORM's flush of one object
    # cost more than the INSERT. The row then becomes the session's, as if loaded.
    values = {key: getattr(attempt, key) for key in _ATTEMPT_FIELDS}
    connection = session.connection()
    attempt.id = connection.execute(_NEW_ATTEMPT, values).scalar_one()
    # Each question's variant, drawn now among those the learner was never shown, is pinned
    # for the attempt: a reload, a resume and Run it show that one.
    shown = sightings.draw(connection, user_id, offer, challenge_set.items, challenge_set.id)
    make_transient_to_detached(attempt)
    session.add(attempt)
    # The questions in one INSERT through the session's connection (the ORM's flush of one
    # object each cost more than the SQL), the first one opened as _open would open it.
    rows: list[dict[str, object]] = [
        {
            "set_attempt_id": attempt.id,
            "item_id": item.id,
            "position": position,
            "status": ItemStatus.PENDING,
            "started_at": None,
            "time_limit_s": None,
            "attempts_allowed": item.attempts,
            "attempts_used": 0,
            "hint_shown_at": None,
            "closed_at": None,
            "last_answer": None,
            "variant_key": shown[position],
        }
        for position, item in enumerate(challenge_set.items)
    ]
    if rows:
        first = challenge_set.items[0]
        rows[0]["status"] = ItemStatus.OPEN
        rows[0]["started_at"] = now
        rows[0]["time_limit_s"] = rules.effective_time_limit(first.time_limit, time_multiplier)
        connection.execute(insert(_ITEMS), rows)
        sightings.record_timed(connection, user_id, challenge_set.id, attempt.id, 0, now)
    session.commit()
    return attempt


def _open(
    session: Session,
    attempt: SetAttempt,
    position: int,
    challenge_set: ChallengeSet,
    now: datetime,
    time_multiplier: float | None,
) -> None:
    """Start an item's clock now (the deadline is derived from this server-written time).

    One prebuilt UPDATE, the row not loaded: the attempt's item ids are its rows in position
    order (_start), so the item, and with it the time limit, is known without reading it."""
    values = _opening(attempt, position, challenge_set, now, time_multiplier)
    session.connection().execute(_OPEN, {**values, "at": position})
    _shown(session, attempt, position, now)


def _shown(session: Session, attempt: SetAttempt, position: int, now: datetime) -> None:
    """Record the sighting of the question just opened (its first showing counts for a badge)."""
    assert attempt.id is not None
    connection = session.connection()
    sightings.record_timed(connection, attempt.user_id, attempt.set_id, attempt.id, position, now)


def _opening(
    attempt: SetAttempt,
    position: int,
    challenge_set: ChallengeSet,
    now: datetime,
    time_multiplier: float | None,
) -> dict[str, object]:
    """The values that open the attempt's question at `position` with its clock starting now."""
    item = challenge_set.item(attempt.item_id_list[position])
    limit = rules.effective_time_limit(item.time_limit, time_multiplier) if item else None
    # Named apart from every column: an UPDATE given a value named as one of its table's
    # columns sets that column too (the move's UPDATE of set_attempt would set its started_at).
    return {"attempt_id": attempt.id, "opened_at": now, "limit_s": limit}


def attempt_for_user(session: Session, attempt_id: int, user_id: int) -> SetAttempt:
    """Load an attempt that belongs to this user, or 404 (never reveal others' attempts)."""
    attempt = session.get(SetAttempt, attempt_id)
    if attempt is None or attempt.user_id != user_id:
        raise NotFound("No such attempt.")
    return attempt


# Compiled once and run on the driver (app.reads): the question page runs it on every view.
_ATTEMPTS = SetAttempt.__table__  # type: ignore[attr-defined]
_ITEMS = ItemAttempt.__table__  # type: ignore[attr-defined]
_NEW_ATTEMPT = insert(_ATTEMPTS).returning(_ATTEMPTS.c.id)
_ATTEMPT_FIELDS = [column.key for column in _ATTEMPTS.columns if column.key != "id"]
_QUESTION = reads.Query(
    select_columns(*_ATTEMPTS.columns, *_ITEMS.columns)
    .outerjoin(
        _ITEMS,
        and_(_ITEMS.c.set_attempt_id == _ATTEMPTS.c.id, _ITEMS.c.position == bindparam("position")),
    )
    .where(_ATTEMPTS.c.id == bindparam("attempt_id"), _ATTEMPTS.c.user_id == bindparam("user_id")),
    SetAttempt,
    ItemAttempt,
)


_ATTEMPT = reads.Query(
    select_columns(*_ATTEMPTS.columns).where(
        _ATTEMPTS.c.id == bindparam("attempt_id"), _ATTEMPTS.c.user_id == bindparam("user_id")
    ),
    SetAttempt,
)


def attempt_of_user(reader: reads.Reader, attempt_id: int, user_id: int) -> SetAttempt:
    """attempt_for_user in one compiled query (detached: a service adds it to its session)."""
    found = reader.first(_ATTEMPT, attempt_id=attempt_id, user_id=user_id)
    if found is None:
        raise NotFound("No such attempt.")
    attempt: SetAttempt = _ATTEMPT.instances(found)[0]
    return attempt


def question_for_user(
    reader: reads.Reader, attempt_id: int, number: int, user_id: int
) -> tuple[SetAttempt, ItemAttempt]:
    """Load question `number` (1-based) of one of this user's attempts, or 404 (one query).

    Both come back detached: a service that changes them adds them to its session first."""
    found = reader.first(_QUESTION, attempt_id=attempt_id, user_id=user_id, position=number - 1)
    if found is None:
        raise NotFound("No such attempt.")
    attempt, row = _QUESTION.instances(found)
    if row is None:
        raise NotFound("No such question in this attempt.")
    return attempt, row


def catalog_item(catalog: Catalog, attempt: SetAttempt, row: ItemAttempt) -> ItemBase:
    """Return the catalog's item for a question, as its pinned variant, or 404 if the set no
    longer has it."""
    found = catalog.item(attempt.set_id, row.item_id, attempt.content_version)
    if found is None:
        raise NotFound("This question is no longer part of the set.")
    try:  # the variant the attempt pinned: what was shown is what is judged and run
        return sightings.shown_item(found[1], row.variant_key)
    except KeyError:
        raise NotFound("This question is no longer part of the set.") from None


def item_at(session: Session, attempt_id: int, position: int) -> ItemAttempt:
    """Load the item attempt at a position, or 404."""
    row = session.exec(_ITEM_AT, params={"attempt_id": attempt_id, "at": position}).first()
    if row is None:
        raise NotFound("No such question in this attempt.")
    return row


def attempt_with_items(
    session: Session, attempt_id: int, user_id: int
) -> tuple[SetAttempt, list[ItemAttempt]]:
    """Load one of this user's attempts with its questions in order, or 404."""
    return attempt_for_user(session, attempt_id, user_id), items_of(session, attempt_id)


def first_answers(session: Session, attempt_id: int) -> dict[int, str]:
    """Each question's first answer, by item attempt id: the pick a first try was judged on."""
    statement = (
        select(col(Submission.item_attempt_id), col(Submission.answer))
        .join(ItemAttempt, col(ItemAttempt.id) == col(Submission.item_attempt_id))
        .where(col(ItemAttempt.set_attempt_id) == attempt_id, col(Submission.number) == 1)
    )
    return {int(row_id): answer for row_id, answer in session.exec(statement)}


def attempt_for_results(
    session: Session, attempt_id: int, user_id: int
) -> tuple[SetAttempt, list[ItemAttempt], dict[int, str]]:
    """One of this user's attempts with its questions in order and their first answers, or 404."""
    attempt, rows = attempt_with_items(session, attempt_id, user_id)
    return attempt, rows, first_answers(session, attempt_id)


def items_of(session: Session, attempt_id: int) -> list[ItemAttempt]:
    """Load every item attempt of an attempt, in order."""
    statement = (
        select(ItemAttempt)
        .where(ItemAttempt.set_attempt_id == attempt_id)
        .order_by(col(ItemAttempt.position))
    )
    return list(session.exec(statement))


def expired(row: ItemAttempt, grace_s: float, now: datetime) -> bool:
    """Whether an open question's time ran out, so that close_if_expired has a time-out to write."""
    return row.status is ItemStatus.OPEN and clock(row, grace_s).expired(now)


def close_if_expired(session: Session, row: ItemAttempt, grace_s: float, now: datetime) -> bool:
    """Record a timeout if the item's time ran out; return whether it is (now) timed out."""
    if not expired(row, grace_s, now):
        return row.status is ItemStatus.TIMED_OUT
    begin_write(session)  # a page view (GET) records the time-out too
    session.add(row)  # a page's row is detached (app.reads): it joins this session
    result = session.execute(
        update(ItemAttempt)
        .where(col(ItemAttempt.id) == row.id, col(ItemAttempt.status) == ItemStatus.OPEN)
        .values(status=ItemStatus.TIMED_OUT, closed_at=now)
    )
    session.commit()
    session.refresh(row)
    return bool(result.rowcount) or row.status is ItemStatus.TIMED_OUT  # type: ignore[attr-defined]


def submit(
    session: Session,
    row: ItemAttempt,
    item: ItemBase,
    raw_answer: Iterable[str],
    grace_s: float,
    now: datetime,
    token: str | None = None,
    seed: str | None = None,
    on_judged: Callable[[Judgement], None] | None = None,
) -> Judgement:
    """Judge an answer, counting the attempt atomically; refuse late or surplus answers.

    `token` names this submission (the question page renders a fresh one with each form): the
    same token sent again, a retry after a time-out, gets its first outcome back and counts
    nothing more, whenever it comes (a unique index decides between two arriving together).
    It is looked up only where the answer would otherwise not count (refused, or its
    submission's row refused by that index): an answer that counts is one round trip shorter.
    `seed` is the order seed the question was shown with (rules.attempt_seed): the options'
    values are its tokens. `on_judged(judgement)` runs for an answer that counted, in its
    transaction before the commit: what it stores is stored with the answer, or nothing is."""
    begin_write(session)

    def first_outcome() -> Judgement | None:
        return _judged(session, row, token) if token is not None else None

    answer = rules.parse_answer(item, raw_answer, seed)
    if answer is None:
        return _or_refuse(first_outcome(), BadRequest(Refusal.INVALID.value))
    if row.status is ItemStatus.PENDING:
        return _or_refuse(first_outcome(), Conflict(Refusal.NOT_OPEN.value))  # never shown
    refused = rules.refusal(
        row.status, clock(row, grace_s), row.attempts_used, row.attempts_allowed, now
    )
    if refused is not None:
        first = first_outcome()
        if first is None and refused is Refusal.TIME_UP:
            close_if_expired(session, row, grace_s, now)
        return _or_refuse(first, Conflict(refused.value))
    # One conditional UPDATE claims the attempt and records its outcome: under parallel requests
    # only those that find an attempt left (and the item still open) succeed; PostgreSQL
    # re-checks the row after the lock, SQLite's BEGIN IMMEDIATE serialises the writers. Then
    # the submission, whose unique indexes decide the races below: on PostgreSQL in the same
    # statement (one round trip, _CLAIMED_AND_STORED), on SQLite right after it.
    assert row.id is not None
    correct = rules.is_correct(item, answer)
    connection = session.connection()
    values = {"row_id": row.id, "answer": answer, "correct": correct, "now": now, "token": token}
    try:
        if connection.dialect.name == "postgresql":
            claimed = connection.execute(_CLAIMED_AND_STORED[correct], values).first()
        else:
            claimed = connection.execute(_CLAIMED[correct], values).first()
            if claimed is not None:
                connection.execute(_SUBMIT, {**values, "number": claimed[0]})
    except IntegrityError as error:  # the unique (item, number) or token index refused it
        session.rollback()  # the claim with it
        first = first_outcome()
        if first is not None:  # the same submission, sent again or arrived at once
            return first
        raise Conflict(Refusal.NO_ATTEMPTS.value) from error
    if claimed is None:
        session.rollback()
        first = first_outcome()  # a parallel request with the same token took the last one
        if first is not None:
            return first
        session.add(row)  # a detached row (a hot form's read) is read back in this session
        session.refresh(row)
        reason = Refusal.CLOSED if row.status.closed else Refusal.NO_ATTEMPTS
        raise Conflict(reason.value)
    used = int(claimed[0])
    status = rules.status_after(correct, used, row.attempts_allowed)  # as _CLAIMED wrote it
    committed: dict[str, object] = {"attempts_used": used, "status": status, "last_answer": answer}
    if status.closed:
        committed["closed_at"] = now
    judgement = Judgement(correct, status, row.attempts_allowed - used, answer)
    if on_judged is not None:
        on_judged(judgement)
    session.commit()
    # What this transaction wrote, as a refresh would read it back (no other writer could
    # change the row between: the claim locked it until the commit).
    for key, value in committed.items():
        set_committed_value(row, key, value)
    return judgement


def _or_refuse(first: Judgement | None, refusal: Exception) -> Judgement:
    """The submission's first outcome if it was stored before (sent again), else the refusal."""
    if first is None:
        raise refusal
    return first


# Built once: an answer's statements, run through the session's connection in its transaction
# (Core, not the ORM: the ORM's bulk UPDATE, flush and refresh cost several times the SQL).
_SUBMISSIONS = Submission.__table__  # type: ignore[attr-defined]


def _claim(correct: bool) -> Update:
    """The conditional UPDATE that claims one of the row's attempts for an answer that is
    `correct` (or not) and records its outcome, as rules.status_after has it: right closes the
    question; wrong closes it when this was the last attempt (SET sees the row as it was)."""
    last = _ITEMS.c.attempts_used + 1 >= _ITEMS.c.attempts_allowed
    now = bindparam("now", type_=_ITEMS.c.closed_at.type)

    def status_is(status: ItemStatus) -> Any:
        return literal(status, _ITEMS.c.status.type)

    status: Any
    closed_at: Any
    if correct:
        status, closed_at = status_is(ItemStatus.CORRECT), now
    else:
        status = case((last, status_is(ItemStatus.INCORRECT)), else_=status_is(ItemStatus.OPEN))
        closed_at = case((last, now), else_=_ITEMS.c.closed_at)
    return (
        update(_ITEMS)
        .where(
            _ITEMS.c.id == bindparam("row_id"),
            _ITEMS.c.status == ItemStatus.OPEN,
            _ITEMS.c.attempts_used < _ITEMS.c.attempts_allowed,
        )
        .values(
            attempts_used=_ITEMS.c.attempts_used + 1,
            status=status,
            closed_at=closed_at,
            last_answer=bindparam("answer", type_=_ITEMS.c.last_answer.type),
        )
        .returning(_ITEMS.c.attempts_used, _ITEMS.c.id)
    )


def _claim_and_store(correct: bool) -> Insert:
    """PostgreSQL: the claim and the submission in one statement, a data-modifying CTE. Where
    nothing is claimed nothing is inserted and no row comes back; where the submission's unique
    indexes refuse it, the statement fails whole (the claim too)."""
    claimed = _claim(correct).cte("claimed")
    number, row_id = claimed.c.attempts_used, claimed.c.id
    stored = select_columns(
        row_id,
        number,
        bindparam("answer", type_=_SUBMISSIONS.c.answer.type),
        bindparam("correct", type_=_SUBMISSIONS.c.correct.type),
        bindparam("now", type_=_SUBMISSIONS.c.submitted_at.type),
        bindparam("token", type_=_SUBMISSIONS.c.token.type),
    )
    columns = ("item_attempt_id", "number", "answer", "correct", "submitted_at", "token")
    return (
        insert(_SUBMISSIONS)
        .from_select(columns, stored)
        .returning(_SUBMISSIONS.c.number)
        .add_cte(claimed)
    )


_CLAIMED = {correct: _claim(correct) for correct in (True, False)}
_CLAIMED_AND_STORED = {correct: _claim_and_store(correct) for correct in (True, False)}
_SUBMIT = insert(_SUBMISSIONS).values(
    item_attempt_id=bindparam("row_id"),
    number=bindparam("number"),
    answer=bindparam("answer"),
    correct=bindparam("correct"),
    submitted_at=bindparam("now"),
    token=bindparam("token"),
)
_JUDGED = select_columns(
    _SUBMISSIONS.c.correct, _SUBMISSIONS.c.number, _SUBMISSIONS.c.answer
).where(
    _SUBMISSIONS.c.token == bindparam("token"),
    _SUBMISSIONS.c.item_attempt_id == bindparam("row_id"),
)


def _judged(session: Session, row: ItemAttempt, token: str) -> Judgement | None:
    """The outcome a submission with this token had, if one was stored for this question."""
    found = session.connection().execute(_JUDGED, {"token": token, "row_id": row.id}).first()
    if found is None:
        return None
    correct, number, answer = bool(found[0]), int(found[1]), str(found[2])
    status = rules.status_after(correct, number, row.attempts_allowed)
    if status is ItemStatus.OPEN and row.status.closed:
        status = row.status  # what it is now: a later answer, or the clock, closed it
    left = row.attempts_allowed - number
    return Judgement(correct, status, left, answer, replayed=True)


def show_hint(session: Session, row: ItemAttempt, now: datetime) -> None:
    """Record that the learner opened the hint (first time only)."""
    if row.hint_shown_at is None:
        begin_write(session)
        row.hint_shown_at = now
        session.add(row)
        session.commit()


def advance(
    session: Session,
    attempt: SetAttempt,
    challenge_set: ChallengeSet | None,
    grace_s: float,
    now: datetime,
    time_multiplier: float | None = 1.0,
    opened_at: datetime | None = None,
) -> SetAttempt:
    """Move past the current item once it is closed: open the next one, or finish the attempt.

    The request's `now` closes what ran out; the next question's clock starts at `opened_at`
    (when the write ran, app.writes.opened_at), or `now`."""
    assert attempt.id is not None
    if attempt.finished:
        return attempt
    begin_write(session)
    next_position = attempt.current_position + 1
    # The set the next question opens from; None where this was the last (or the set is gone).
    going_on = challenge_set if next_position < len(attempt.item_id_list) else None
    opened = opened_at or now
    if going_on is not None and _moved_on(session, attempt, going_on, opened, time_multiplier):
        session.commit()
        set_committed_value(attempt, "current_position", next_position)
        return attempt
    # The question is not closed yet (its time may have run out), or another tab moved first.
    row = item_at(session, attempt.id, attempt.current_position)
    close_if_expired(session, row, grace_s, now)
    if not row.status.closed:
        raise Conflict("Answer this question (or let its time run out) before moving on.")
    connection = session.connection()
    # The attempt has a row per item id it started with (_start): no need to load them to count.
    if going_on is not None:
        # Conditional, so two tabs clicking "next" at once advance only one step.
        values: dict[str, object] = {"current_position": next_position}
        moved = connection.execute(
            _MOVE, {"attempt_id": attempt.id, "at": attempt.current_position, **values}
        )
        if moved.rowcount:
            _open(session, attempt, next_position, going_on, opened, time_multiplier)
    else:
        rows = items_of(session, attempt.id)
        result = rules.score((item.status, item.attempts_used) for item in rows)
        values = {"finished_at": now, "correct_count": result.correct}
        first = sightings.first_sights(connection, attempt.id)
        counted = (sightings.counted(row, first) for row in rows)
        values["badge_earned"] = rules.badge_earned(result, counted)
        moved = connection.execute(_FINISH, {"attempt_id": attempt.id, **values})
        if moved.rowcount:  # the LMS is owed the score: in this transaction, so never lost
            lti_grades.enqueue_scores(session, attempt.user_id, attempt.set_id, now)
    session.commit()
    if moved.rowcount:  # what this transaction wrote, as a refresh would read it back
        for key, value in values.items():
            set_committed_value(attempt, key, value)
    else:  # another request (a second tab) moved it first: as it is now
        session.refresh(attempt)
    return attempt


def _moved_on(
    session: Session,
    attempt: SetAttempt,
    challenge_set: ChallengeSet,
    opened: datetime,
    time_multiplier: float | None,
) -> bool:
    """Where the current question is closed, move to the next and start its clock at `opened`:
    one statement on PostgreSQL (_MOVED_AND_OPENED), two on SQLite. False, with nothing
    written, where it is not closed (or another tab moved first): advance then looks closer."""
    position = attempt.current_position + 1
    values = _opening(attempt, position, challenge_set, opened, time_multiplier)
    values.update(at=attempt.current_position, current_position=position)
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        if not connection.execute(_MOVED_AND_OPENED, values).rowcount:
            return False
    elif not connection.execute(_MOVE_IF_CLOSED, values).rowcount:
        return False
    else:
        connection.execute(_OPEN, {**values, "at": position})
    _shown(session, attempt, position, opened)
    return True


_ITEM_AT = select(ItemAttempt).where(
    col(ItemAttempt.set_attempt_id) == bindparam("attempt_id"),
    col(ItemAttempt.position) == bindparam("at"),
)
_OPEN = (
    update(_ITEMS)
    .where(_ITEMS.c.set_attempt_id == bindparam("attempt_id"), _ITEMS.c.position == bindparam("at"))
    .values(
        status=ItemStatus.OPEN,
        started_at=bindparam("opened_at", type_=_ITEMS.c.started_at.type),
        time_limit_s=bindparam("limit_s", type_=_ITEMS.c.time_limit_s.type),
    )
)
_MOVE = (
    update(_ATTEMPTS)
    .where(
        _ATTEMPTS.c.id == bindparam("attempt_id"), _ATTEMPTS.c.current_position == bindparam("at")
    )
    .values(current_position=bindparam("current_position"))
)
_CLOSED = select_columns(_ITEMS.c.id).where(
    _ITEMS.c.set_attempt_id == bindparam("attempt_id"),
    _ITEMS.c.position == bindparam("at"),
    # Not IN (...): an expanding parameter inside a CTE goes without its value (SQLAlchemy 2.1).
    or_(*(_ITEMS.c.status == status for status in ItemStatus if status.closed)),
)
_MOVE_IF_CLOSED = _MOVE.where(_CLOSED.exists())
_MOVED = _MOVE_IF_CLOSED.returning(_ATTEMPTS.c.id).cte("moved")
# PostgreSQL: the move and the next question's opening in one data-modifying statement; it
# opens a question only where the move happened (one row: the count says whether it did).
_MOVED_AND_OPENED = (
    update(_ITEMS)
    .where(
        _ITEMS.c.set_attempt_id == select_columns(_MOVED.c.id).scalar_subquery(),
        _ITEMS.c.position == bindparam("current_position"),
    )
    .values(
        status=ItemStatus.OPEN,
        started_at=bindparam("opened_at", type_=_ITEMS.c.started_at.type),
        time_limit_s=bindparam("limit_s", type_=_ITEMS.c.time_limit_s.type),
    )
    .add_cte(_MOVED)
)
_FINISH = (
    update(_ATTEMPTS)
    .where(_ATTEMPTS.c.id == bindparam("attempt_id"), _ATTEMPTS.c.finished_at.is_(None))
    .values(
        finished_at=bindparam("finished_at", type_=_ATTEMPTS.c.finished_at.type),
        correct_count=bindparam("correct_count"),
        badge_earned=bindparam("badge_earned"),
    )
)


_HISTORY = reads.Query(
    select_columns(*_ATTEMPTS.columns)
    .where(_ATTEMPTS.c.user_id == bindparam("user_id"))
    .order_by(_ATTEMPTS.c.started_at.desc(), _ATTEMPTS.c.id.desc()),
    SetAttempt,
)


def history(reader: reads.Reader, user_id: int) -> list[SetAttempt]:
    """Return the user's attempts, newest first (one query, on a page's reader)."""
    return [_HISTORY.instances(row)[0] for row in reader.rows(_HISTORY, user_id=user_id)]


@dataclass
class SetStanding:
    """A user's standing on one set, for the home page."""

    attempts: int = 0
    best_correct: int = 0
    badge: bool = False
    active_attempt_id: int | None = None
    last_started: datetime | None = None  # the latest attempt's start (the course path's)


_FINISHED = col(SetAttempt.finished_at).is_not(None)
# Like _QUESTION: the home page runs it on every view of a signed-in visitor.
_STANDINGS = (
    select_columns(
        col(SetAttempt.set_id),
        func.count(),
        func.max(case((_FINISHED, col(SetAttempt.correct_count)), else_=0)),
        func.max(case((and_(_FINISHED, col(SetAttempt.badge_earned)), 1), else_=0)),
        # At most one unfinished attempt per set (a unique index), so max() is that one.
        func.max(case((col(SetAttempt.finished_at).is_(None), col(SetAttempt.id)))),
        func.max(col(SetAttempt.started_at)),
    )
    .where(col(SetAttempt.user_id) == bindparam("user_id"))
    .group_by(col(SetAttempt.set_id))
)
_ALL_STANDINGS = reads.Query(_STANDINGS)
_ONE_STANDING = reads.Query(_STANDINGS.where(col(SetAttempt.set_id) == bindparam("set_id")))


def standings(
    reader: reads.Reader, user_id: int, set_id: str | None = None
) -> dict[str, SetStanding]:
    """Summarise the user's attempts per set id (or at one set), in one aggregate query."""
    rows = (
        reader.rows(_ALL_STANDINGS, user_id=user_id)
        if set_id is None
        else reader.rows(_ONE_STANDING, user_id=user_id, set_id=set_id)
    )
    return {
        row_set_id: SetStanding(int(count), int(best), bool(badge), active, last)
        for row_set_id, count, best, badge, active, last in rows
    }


def standing(reader: reads.Reader, user_id: int, set_id: str) -> SetStanding | None:
    """Return the user's standing on one set, or None if they never tried it."""
    return standings(reader, user_id, set_id).get(set_id)


def skip_removed_items(
    session: Session,
    attempt: SetAttempt,
    challenge_set: ChallengeSet | None,
    grace_s: float,
    now: datetime,
    time_multiplier: float | None = 1.0,
) -> SetAttempt:
    """Close the current question if an edit removed it from the set, and move on.

    Attempts keep their stable item ids; when an instructor deletes an item, a learner who is on
    it must not be stuck on a question that can no longer be shown or answered.
    """
    assert attempt.id is not None
    while not attempt.finished and challenge_set is not None:
        row = item_at(session, attempt.id, attempt.current_position)
        if challenge_set.item(row.item_id) is not None:
            break
        begin_write(session)
        session.refresh(row)  # as it is now, inside the write lock
        if not row.status.closed:
            row.status = ItemStatus.TIMED_OUT  # scored as not answered: it was never answerable
            row.closed_at = now
            row.started_at = row.started_at or now
            session.add(row)
            session.commit()
        attempt = advance(session, attempt, challenge_set, grace_s, now, time_multiplier)
    return attempt

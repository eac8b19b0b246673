"""Read-only queries behind the admin dashboards: the database adds up, the rules do arithmetic.

Every statistic is a GROUP BY over the attempts (a handful of rows per set, item or learner),
never a load of every attempt into Python; only the pages that list attempts load them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Float, and_, case, cast, distinct, func, literal
from sqlalchemy import select as select_columns
from sqlalchemy.sql import ColumnElement
from sqlmodel import Session, col, select

from app.accounts.models import Role, User
from app.analytics import rules
from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.attempts.rules import ItemStatus
from app.challenges.catalog import Catalog
from app.challenges.schema import ChoiceBase
from app.errors import NotFound

FINISHED = col(SetAttempt.finished_at).is_not(None)
CLOSED = (ItemStatus.CORRECT, ItemStatus.INCORRECT, ItemStatus.TIMED_OUT)


def set_attempts(
    session: Session, set_id: str | None = None, user_id: int | None = None
) -> list[SetAttempt]:
    """Load set attempts, oldest first, optionally for one set or one user (pages that list)."""
    statement = select(SetAttempt).order_by(col(SetAttempt.started_at), col(SetAttempt.id))
    if set_id is not None:
        statement = statement.where(SetAttempt.set_id == set_id)
    if user_id is not None:
        statement = statement.where(SetAttempt.user_id == user_id)
    return list(session.exec(statement))


def _items_per_attempt() -> Any:
    """How many questions each attempt has (its score's denominator)."""
    return (
        select(col(ItemAttempt.set_attempt_id).label("attempt_id"), func.count().label("questions"))
        .group_by(col(ItemAttempt.set_attempt_id))
        .subquery()
    )


def attempt_totals(
    session: Session, by: Any, set_id: str | None = None, user_id: int | None = None
) -> dict[Any, rules.AttemptTotals]:
    """Add up attempts per value of the column `by` (a set id or a user id), in one query."""
    items = _items_per_attempt()
    questions = items.c.questions
    score = case(  # a finished attempt's score in percent; NULL for an unfinished one
        (and_(FINISHED, questions > 0), 100.0 * col(SetAttempt.correct_count) / questions),
        (FINISHED, literal(0.0)),
    )
    earned = and_(FINISHED, col(SetAttempt.badge_earned))
    statement = (
        select_columns(
            by,
            func.count(),
            func.count(col(SetAttempt.finished_at)),
            func.coalesce(func.sum(case((earned, 1), else_=0)), 0),
            func.count(distinct(case((earned, col(SetAttempt.set_id))))),
            func.coalesce(func.sum(score), 0.0),
            func.max(score),
        )
        .join(items, items.c.attempt_id == col(SetAttempt.id), isouter=True)
        .group_by(by)
    )
    if set_id is not None:
        statement = statement.where(col(SetAttempt.set_id) == set_id)
    if user_id is not None:
        statement = statement.where(col(SetAttempt.user_id) == user_id)
    return {
        key: rules.AttemptTotals(
            int(count),
            int(finished),
            int(badges),
            int(badge_sets),
            float(score_sum),
            None if best is None else float(best),
        )
        for key, count, finished, badges, badge_sets, score_sum, best in session.execute(statement)
    }


def _day(value: Any) -> date:
    # SQLite's date() gives text, PostgreSQL's a date.
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def daily_activity(session: Session) -> list[rules.DayActivity]:
    """Count attempts started, completed and badges first awarded per UTC day (3 queries)."""

    def per_day(moment: Any, *where: ColumnElement[bool]) -> dict[date, int]:
        day = func.date(moment)
        statement = select(day, func.count()).where(*where).group_by(day)
        return {_day(value): int(count) for value, count in session.exec(statement)}

    first = (  # a badge is awarded once per learner and set: when it was first earned
        select(func.min(col(SetAttempt.finished_at)).label("at"))
        .where(FINISHED, col(SetAttempt.badge_earned))
        .group_by(col(SetAttempt.user_id), col(SetAttempt.set_id))
        .subquery()
    )
    return rules.daily_activity(
        started=per_day(col(SetAttempt.started_at)),
        completed=per_day(col(SetAttempt.finished_at), FINISHED),
        badges=per_day(first.c.at),
    )


def overview_totals(session: Session) -> dict[str, int]:
    """Count learners, attempts, completions and badges awarded (once per learner and set)."""
    attempts, completions = session.exec(
        select(func.count(), func.count(col(SetAttempt.finished_at)))
    ).one()
    awarded = (
        select(col(SetAttempt.user_id), col(SetAttempt.set_id))
        .where(FINISHED, col(SetAttempt.badge_earned))
        .distinct()
        .subquery()
    )
    return {
        "learners": learner_count(session),
        "attempts": int(attempts),
        "completions": int(completions),
        "badges": int(session.exec(select(func.count()).select_from(awarded)).one()),
    }


def learner_count(session: Session) -> int:
    """Count the accounts with the learner role (guests included)."""
    statement = select(func.count()).select_from(User).where(User.role == Role.LEARNER)
    return int(session.exec(statement).one())


def users(session: Session) -> list[User]:
    """Load every user, oldest first."""
    return list(session.exec(select(User).order_by(col(User.created_at), col(User.id))))


def user_or_404(session: Session, user_id: int) -> User:
    """Load one user, or 404."""
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"No user {user_id}.")
    return user


def learner_rows(
    session: Session, user_id: int | None = None
) -> list[tuple[User, rules.LearnerSummary]]:
    """Every user (or one) with the summary of their attempts, in two queries."""
    totals = attempt_totals(session, col(SetAttempt.user_id), user_id=user_id)
    last = func.max(func.coalesce(col(SetAttempt.finished_at), col(SetAttempt.started_at)))
    statement = select(col(SetAttempt.user_id), last).group_by(col(SetAttempt.user_id))
    if user_id is not None:
        statement = statement.where(col(SetAttempt.user_id) == user_id)
    last_active = dict(session.exec(statement).all())
    people = [user_or_404(session, user_id)] if user_id is not None else users(session)
    rows = []
    for person in people:
        assert person.id is not None
        summary = rules.learner_summary(
            totals.get(person.id, rules.NO_ATTEMPTS), last_active.get(person.id)
        )
        rows.append((person, summary))
    return rows


@dataclass(frozen=True)
class SetRow:
    """One set on the overview: its id, title and summary."""

    set_id: str
    title: str
    summary: rules.SetSummary


def _latest_titles(session: Session) -> dict[str, str]:
    """Each set id's title as its newest attempt recorded it (for sets no longer served)."""
    newest = (
        select(
            col(SetAttempt.set_id).label("set_id"),
            col(SetAttempt.set_title).label("title"),
            func.row_number()
            .over(
                partition_by=col(SetAttempt.set_id),
                order_by=(col(SetAttempt.started_at).desc(), col(SetAttempt.id).desc()),
            )
            .label("position"),
        )
    ).subquery()
    statement = select(newest.c.set_id, newest.c.title).where(newest.c.position == 1)
    return dict(session.exec(statement).all())


def set_rows(session: Session, catalog: Catalog, user_id: int | None = None) -> list[SetRow]:
    """Summarise every served set, then any set that has attempts but is no longer served."""
    totals = attempt_totals(session, col(SetAttempt.set_id), user_id=user_id)
    titles = {loaded.challenge_set.id: loaded.challenge_set.title for loaded in catalog.ordered()}
    if user_id is not None:  # one learner's page: only the sets they tried
        titles = {set_id: title for set_id, title in titles.items() if set_id in totals}
    if set(totals) - set(titles):
        for set_id, title in _latest_titles(session).items():
            if set_id in totals:
                titles.setdefault(set_id, title)
    return [
        SetRow(set_id, title, rules.set_summary(totals.get(set_id, rules.NO_ATTEMPTS)))
        for set_id, title in titles.items()
    ]


@dataclass(frozen=True)
class ItemRow:
    """One item of a set with its statistics and what it is called."""

    title: str
    kind: str
    statistics: rules.ItemStatistics
    key: frozenset[str] = frozenset()  # the correct options, marked beside their counts
    has_hint: bool = False  # "0 hints shown" would misread for an item that has none


def _seconds(session: Session, start: Any, end: Any) -> Any:
    """Seconds from start to end, in SQL (each database spells a time difference its own way)."""
    if session.get_bind().dialect.name == "sqlite":
        # julianday() is a day count in a double: round to the millisecond it cannot hold.
        return func.round((func.julianday(end) - func.julianday(start)) * 86400.0, 3)
    return cast(func.extract("epoch", end - start), Float)


def item_totals(
    session: Session, set_id: str | None = None
) -> dict[tuple[str, str], rules.ItemTotals]:
    """Add up each item's questions in finished attempts: (set id, item id) -> ItemTotals."""
    item = ItemAttempt
    x = case((col(item.status) == ItemStatus.CORRECT, 1), else_=0)
    first = case(
        (and_(col(item.status) == ItemStatus.CORRECT, col(item.attempts_used) == 1), 1), else_=0
    )
    finished_in = [FINISHED] if set_id is None else [FINISHED, col(SetAttempt.set_id) == set_id]
    scores = (
        select(col(item.set_attempt_id).label("attempt_id"), func.sum(x).label("total"))
        .join(SetAttempt, col(SetAttempt.id) == col(item.set_attempt_id))
        .where(*finished_in)
        .group_by(col(item.set_attempt_id))
        .subquery()
    )
    y = scores.c.total - x  # the rest of the test
    known = and_(
        col(item.status).in_(CLOSED),
        col(item.started_at).is_not(None),
        col(item.closed_at).is_not(None),
    )
    gap = _seconds(session, col(item.started_at), col(item.closed_at))
    # A time-out is recorded when the learner (or the page) next asks, maybe hours later; the
    # learner's time on the question was its limit, not the gap.
    capped = case(
        (
            and_(
                col(item.status) == ItemStatus.TIMED_OUT,
                col(item.time_limit_s).is_not(None),
                gap > col(item.time_limit_s),
            ),
            col(item.time_limit_s),
        ),
        else_=gap,
    )
    statement = (
        select_columns(
            col(SetAttempt.set_id),
            col(item.item_id),
            func.count(),
            func.sum(x),
            func.sum(y),
            func.sum(x * y),
            func.sum(y * y),
            func.sum(case((known, 1), else_=0)),
            func.coalesce(func.sum(case((known, capped))), 0.0),
            func.sum(case((col(item.status) == ItemStatus.TIMED_OUT, 1), else_=0)),
            func.count(col(item.hint_shown_at)),
            func.sum(first),
        )
        .join(SetAttempt, col(SetAttempt.id) == col(item.set_attempt_id))
        .join(scores, scores.c.attempt_id == col(item.set_attempt_id))
        .where(*finished_in)
        .group_by(col(SetAttempt.set_id), col(item.item_id))
    )
    totals = {}
    for row in session.execute(statement):
        row_set, item_id, n, sx, sy, sxy, syy, timed, seconds, timeouts, hints, firsts = row
        totals[(row_set, item_id)] = rules.ItemTotals(
            item_id=item_id,
            attempts=int(n),
            correct=int(sx),
            rest=int(sy),
            correct_times_rest=int(sxy),
            rest_squared=int(syy),
            timed=int(timed),
            seconds=float(seconds),
            timeouts=int(timeouts),
            hints=int(hints),
            first_try=int(firsts),
        )
    return totals


def answer_counts(
    session: Session, set_id: str | None = None
) -> dict[tuple[str, str], dict[str, int]]:
    """How often each answer was submitted per item, in finished attempts, first given first."""
    statement = (
        select(
            col(SetAttempt.set_id),
            col(ItemAttempt.item_id),
            col(Submission.answer),
            func.count(),
        )
        .join(ItemAttempt, col(ItemAttempt.id) == col(Submission.item_attempt_id))
        .join(SetAttempt, col(SetAttempt.id) == col(ItemAttempt.set_attempt_id))
        .where(FINISHED)
        .group_by(col(SetAttempt.set_id), col(ItemAttempt.item_id), col(Submission.answer))
        .order_by(func.min(col(Submission.id)))
    )
    if set_id is not None:
        statement = statement.where(col(SetAttempt.set_id) == set_id)
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for row_set, item_id, answer, count in session.exec(statement):
        counts[(row_set, item_id)][answer] = int(count)
    return counts


def item_rows(
    session: Session,
    catalog: Catalog,
    set_id: str,
    totals: dict[tuple[str, str], rules.ItemTotals] | None = None,
    answers: dict[tuple[str, str], dict[str, int]] | None = None,
) -> list[ItemRow]:
    """Compute the set's item statistics, items in the set's order; 404 for an unknown set.

    totals and answers, from item_totals and answer_counts, may cover every set at once (the
    CSV export asks twice for all sets, not twice per set).
    """
    loaded = catalog.get(set_id)
    if loaded is None and not _has_attempts(session, set_id):
        raise NotFound(f"No challenge set {set_id!r}.")
    totals = item_totals(session, set_id) if totals is None else totals
    answers = answer_counts(session, set_id) if answers is None else answers
    items = loaded.challenge_set.items if loaded else []
    options = {
        item.id: [option.id for option in item.options]
        for item in items
        if isinstance(item, ChoiceBase)
    }
    known = {item.id: item for item in items}
    statistics = rules.item_statistics(
        [total for (row_set, _), total in totals.items() if row_set == set_id],
        list(known),
        options,
        {item_id: counts for (row_set, item_id), counts in answers.items() if row_set == set_id},
        {item.id: item.difficulty.value for item in items},
    )
    rows = []
    for stats in statistics:
        item = known.get(stats.item_id)
        if item is None:  # removed from the set since: its history still counts
            rows.append(ItemRow(stats.item_id, "removed", stats))
            continue
        key = item.answer_ids if isinstance(item, ChoiceBase) else frozenset()
        kind = getattr(item, "kind", "choice")
        rows.append(ItemRow(item.title, kind, stats, key, has_hint=item.hint is not None))
    return rows


def _has_attempts(session: Session, set_id: str) -> bool:
    if "\x00" in set_id:  # PostgreSQL refuses text holding NUL (a 500); no set id holds one
        return False
    statement = select(col(SetAttempt.id)).where(col(SetAttempt.set_id) == set_id).limit(1)
    return session.exec(statement).first() is not None


def set_title(session: Session, catalog: Catalog, set_id: str) -> str:
    """Return the set's title (from the catalog, else from its newest attempt), or 404."""
    loaded = catalog.get(set_id)
    if loaded is not None:
        return loaded.challenge_set.title
    if not _has_attempts(session, set_id):
        raise NotFound(f"No challenge set {set_id!r}.")
    statement = (
        select(col(SetAttempt.set_title))
        .where(col(SetAttempt.set_id) == set_id)
        .order_by(col(SetAttempt.started_at).desc(), col(SetAttempt.id).desc())
        .limit(1)
    )
    return str(session.exec(statement).one())

"""Read-only queries behind the admin dashboards; the statistics themselves are pure rules."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, col, select

from app.accounts.models import Role, User
from app.analytics import rules
from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.challenges.catalog import Catalog
from app.challenges.schema import ChoiceBase
from app.errors import NotFound


def _record(attempt: SetAttempt) -> rules.AttemptRecord:
    assert attempt.id is not None
    return rules.AttemptRecord(
        attempt_id=attempt.id,
        user_id=attempt.user_id,
        set_id=attempt.set_id,
        started_at=attempt.started_at,
        finished_at=attempt.finished_at,
        correct=attempt.correct_count,
        total=len(attempt.item_id_list),
        badge=attempt.badge_earned,
    )


def set_attempts(
    session: Session, set_id: str | None = None, user_id: int | None = None
) -> list[SetAttempt]:
    """Load set attempts, oldest first, optionally for one set or one user."""
    statement = select(SetAttempt).order_by(col(SetAttempt.started_at), col(SetAttempt.id))
    if set_id is not None:
        statement = statement.where(SetAttempt.set_id == set_id)
    if user_id is not None:
        statement = statement.where(SetAttempt.user_id == user_id)
    return list(session.exec(statement))


def attempt_records(
    session: Session, set_id: str | None = None, user_id: int | None = None
) -> list[rules.AttemptRecord]:
    """Load attempts as the rules' records."""
    return [_record(attempt) for attempt in set_attempts(session, set_id, user_id)]


def item_records(session: Session, set_id: str) -> list[rules.ItemRecord]:
    """Load every question of the set's finished attempts, with the answers submitted for it."""
    finished = (
        select(ItemAttempt)
        .join(SetAttempt, col(SetAttempt.id) == col(ItemAttempt.set_attempt_id))
        .where(SetAttempt.set_id == set_id, col(SetAttempt.finished_at).is_not(None))
    )
    rows = list(session.exec(finished.order_by(col(ItemAttempt.id))))
    answers: dict[int, list[str]] = defaultdict(list)
    submissions = (
        select(Submission)
        .join(ItemAttempt, col(ItemAttempt.id) == col(Submission.item_attempt_id))
        .join(SetAttempt, col(SetAttempt.id) == col(ItemAttempt.set_attempt_id))
        .where(SetAttempt.set_id == set_id, col(SetAttempt.finished_at).is_not(None))
        .order_by(col(Submission.item_attempt_id), col(Submission.number))
    )
    for submission in session.exec(submissions):
        answers[submission.item_attempt_id].append(submission.answer)
    return [
        rules.ItemRecord(
            attempt_id=row.set_attempt_id,
            item_id=row.item_id,
            status=row.status,
            started_at=row.started_at,
            closed_at=row.closed_at,
            time_limit_s=row.time_limit_s,
            hint_shown=row.hint_shown_at is not None,
            answers=tuple(answers[row.id] if row.id is not None else ()),
        )
        for row in rows
    ]


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


@dataclass(frozen=True)
class SetRow:
    """One set on the overview: its id, title and summary."""

    set_id: str
    title: str
    summary: rules.SetSummary


def set_rows(session: Session, catalog: Catalog) -> list[SetRow]:
    """Summarise every served set, then any set that has attempts but is no longer served."""
    attempts = set_attempts(session)
    grouped = rules.by_set(_record(attempt) for attempt in attempts)
    titles = {loaded.challenge_set.id: loaded.challenge_set.title for loaded in catalog.ordered()}
    for attempt in attempts:
        titles.setdefault(attempt.set_id, attempt.set_title)
    return [
        SetRow(set_id, title, rules.set_summary(grouped.get(set_id, [])))
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


def item_rows(session: Session, catalog: Catalog, set_id: str) -> list[ItemRow]:
    """Compute the set's item statistics, items in the set's order; 404 for an unknown set."""
    loaded = catalog.get(set_id)
    if loaded is None and not set_attempts(session, set_id):
        raise NotFound(f"No challenge set {set_id!r}.")
    records = item_records(session, set_id)
    items = loaded.challenge_set.items if loaded else []
    options = {
        item.id: [option.id for option in item.options]
        for item in items
        if isinstance(item, ChoiceBase)
    }
    known = {item.id: item for item in items}
    statistics = rules.item_statistics(records, list(known), options)
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


def set_title(session: Session, catalog: Catalog, set_id: str) -> str:
    """Return the set's title (from the catalog, else from its attempts), or 404."""
    loaded = catalog.get(set_id)
    if loaded is not None:
        return loaded.challenge_set.title
    attempts = set_attempts(session, set_id)
    if not attempts:
        raise NotFound(f"No challenge set {set_id!r}.")
    return attempts[-1].set_title

"""Read-only queries behind the admin dashboards: the database adds up, the rules do arithmetic.

Every statistic is a GROUP BY over the attempts (a handful of rows per set, item or learner),
never a load of every attempt into Python; only the pages that list attempts load them. Scores
are the exception that proves it: the database groups each finished attempt's questions by
(status, tries) and Python scores them with app.attempts.rules.score, the results page's own
function, because a copy in SQL would round a score like 12.5 % its own way (SQLite's round
and PostgreSQL's numeric one go half away from zero, Python's round half to even), and the
score staff see must be the one the learner saw.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Float, and_, case, cast, distinct, func
from sqlalchemy import select as select_columns
from sqlalchemy.sql import ColumnElement
from sqlmodel import Session, col, select

from app.accounts.models import Role, User
from app.analytics import rules
from app.attempts import rules as attempt_rules
from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.attempts.rules import ItemStatus
from app.challenges import variants
from app.challenges.catalog import Catalog
from app.challenges.loader import LoadedSet
from app.challenges.schema import ChoiceBase, ItemBase
from app.classes.models import Membership
from app.errors import NotFound
from app.lessons import rules as lesson_rules
from app.lessons.models import CHECK, LessonProgress

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


def _item_results(*where: ColumnElement[bool], by: Any = None) -> Any:
    """Each finished attempt's questions as (key, attempt id, status, tries used, count)."""
    key = col(SetAttempt.id) if by is None else by
    return (
        select_columns(
            key,
            col(ItemAttempt.set_attempt_id),
            col(ItemAttempt.status),
            col(ItemAttempt.attempts_used),
            func.count(),
        )
        .join(SetAttempt, col(SetAttempt.id) == col(ItemAttempt.set_attempt_id))
        .where(FINISHED, *where)
        .group_by(key, col(ItemAttempt.set_attempt_id), col(ItemAttempt.status))
        .group_by(col(ItemAttempt.attempts_used))
    )


def _scores(session: Session, statement: Any) -> dict[tuple[Any, int], attempt_rules.Score]:
    """Score each attempt from its questions with the results page's rule (one definition)."""
    results: dict[tuple[Any, int], list[tuple[ItemStatus, int]]] = defaultdict(list)
    for key, attempt_id, status, used, count in session.execute(statement):
        results[(key, attempt_id)].extend([(ItemStatus(status), int(used))] * int(count))
    return {found: attempt_rules.score(listed) for found, listed in results.items()}


def attempt_scores(session: Session, user_id: int | None = None) -> dict[int, attempt_rules.Score]:
    """Every finished attempt's score (or one user's), exactly as its results page shows it."""
    where = [] if user_id is None else [col(SetAttempt.user_id) == user_id]
    statement = _item_results(*where)
    return {attempt_id: score for (_, attempt_id), score in _scores(session, statement).items()}


def attempt_totals(
    session: Session, by: Any, set_id: str | None = None, user_id: int | None = None
) -> dict[Any, rules.AttemptTotals]:
    """Add up attempts per value of the column `by` (a set id or a user id): the counts in one
    query; the scores from each finished attempt's questions, scored as its results page does."""
    earned = and_(FINISHED, col(SetAttempt.badge_earned))
    where = []
    if set_id is not None:
        where.append(col(SetAttempt.set_id) == set_id)
    if user_id is not None:
        where.append(col(SetAttempt.user_id) == user_id)
    statement = (
        select_columns(
            by,
            func.count(),
            func.count(col(SetAttempt.finished_at)),
            func.coalesce(func.sum(case((earned, 1), else_=0)), 0),
            func.count(distinct(case((earned, col(SetAttempt.set_id))))),
        )
        .where(*where)
        .group_by(by)
    )
    percents: dict[Any, list[int]] = defaultdict(list)
    for (key, _), score in _scores(session, _item_results(*where, by=by)).items():
        percents[key].append(score.percent)
    totals = {}
    for key, count, finished, badges, badge_sets in session.execute(statement):
        seen = percents.get(key, [])
        totals[key] = rules.AttemptTotals(
            int(count),
            int(finished),
            int(badges),
            int(badge_sets),
            float(sum(seen)),
            float(max(seen)) if seen else None,
        )
    return totals


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
    version: str | None = None  # the set's content version these answers were given under

    @property
    def version_label(self) -> str:
        """The version as staff read it: its hash's first characters."""
        return self.version[:8] if self.version else "unversioned"


def _seconds(session: Session, start: Any, end: Any) -> Any:
    """Seconds from start to end, in SQL (each database spells a time difference its own way)."""
    if session.get_bind().dialect.name == "sqlite":
        # julianday() is a day count in a double: round to the millisecond it cannot hold.
        return func.round((func.julianday(end) - func.julianday(start)) * 86400.0, 3)
    return cast(func.extract("epoch", end - start), Float)


# An item's statistics are kept per content version of its set (an attempt keeps the version
# it started on): an answer right under one version's key may be wrong under the next.
ItemKey = tuple[str, str | None, str]  # (set id, content version, item id)
VERSION = col(SetAttempt.content_version)
# And per variant of a parameterised item: its questions count as "<item id>@<variant key>" (a
# variant has its own key and distractors); an item without parameters is counted by its id.
VARIANT_SEPARATOR = "@"
QUESTION = case(
    (col(ItemAttempt.variant_key) == "", col(ItemAttempt.item_id)),
    else_=col(ItemAttempt.item_id) + VARIANT_SEPARATOR + col(ItemAttempt.variant_key),
)


def _credits(session: Session, finished_in: list[Any]) -> dict[ItemKey, float]:
    """Each item's summed credit, every question credited by the rule the results page uses."""
    item = ItemAttempt
    statement = (
        select_columns(
            col(SetAttempt.set_id),
            VERSION,
            QUESTION,
            col(item.status),
            col(item.attempts_used),
            func.count(),
        )
        .join(SetAttempt, col(SetAttempt.id) == col(item.set_attempt_id))
        .where(*finished_in)
        .group_by(col(SetAttempt.set_id), VERSION, QUESTION, col(item.status))
        .group_by(col(item.attempts_used))
    )
    credits: dict[ItemKey, float] = defaultdict(float)
    for row_set, version, item_id, status, used, count in session.execute(statement):
        credit = attempt_rules.credit(ItemStatus(status), int(used))
        credits[(row_set, version, item_id)] += credit * int(count)
    return credits


def item_totals(session: Session, set_id: str | None = None) -> dict[ItemKey, rules.ItemTotals]:
    """Add up each item's questions in finished attempts, per content version of its set:
    (set id, version, item id) -> ItemTotals."""
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
            VERSION,
            QUESTION,
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
        .group_by(col(SetAttempt.set_id), VERSION, QUESTION)
    )
    credits = _credits(session, finished_in)
    totals = {}
    for row in session.execute(statement):
        row_set, version, item_id, n, sx, sy, sxy, syy, timed, seconds, timeouts, hints, firsts = (
            row
        )
        totals[(row_set, version, item_id)] = rules.ItemTotals(
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
            credit=credits[(row_set, version, item_id)],
        )
    return totals


def answer_counts(session: Session, set_id: str | None = None) -> dict[ItemKey, dict[str, int]]:
    """How often each answer was submitted per item and content version, in finished attempts,
    first given first."""
    statement = (
        select_columns(
            col(SetAttempt.set_id),
            VERSION,
            QUESTION,
            col(Submission.answer),
            func.count(),
        )
        .join(ItemAttempt, col(ItemAttempt.id) == col(Submission.item_attempt_id))
        .join(SetAttempt, col(SetAttempt.id) == col(ItemAttempt.set_attempt_id))
        .where(FINISHED)
        .group_by(col(SetAttempt.set_id), VERSION, QUESTION, col(Submission.answer))
        .order_by(func.min(col(Submission.id)))
    )
    if set_id is not None:
        statement = statement.where(col(SetAttempt.set_id) == set_id)
    counts: dict[ItemKey, dict[str, int]] = defaultdict(dict)
    for row_set, version, item_id, answer, count in session.execute(statement):
        counts[(row_set, version, item_id)][answer] = int(count)
    return counts


def _versions_newest_first(session: Session, set_id: str) -> list[str | None]:
    """The content versions the set's attempts started on, the newest attempt's first."""
    statement = (
        select(VERSION)
        .where(col(SetAttempt.set_id) == set_id)
        .group_by(VERSION)
        .order_by(func.max(col(SetAttempt.id)).desc())
    )
    return list(session.exec(statement))


def item_rows(
    session: Session,
    catalog: Catalog,
    set_id: str,
    totals: dict[ItemKey, rules.ItemTotals] | None = None,
    answers: dict[ItemKey, dict[str, int]] | None = None,
) -> list[ItemRow]:
    """Compute the set's item statistics per content version with finished attempts (the served
    one first, then by newest attempt), items in that version's order; 404 for an unknown set.

    totals and answers, from item_totals and answer_counts, may cover every set at once (the
    CSV export asks twice for all sets, not twice per set).
    """
    loaded = catalog.get(set_id)
    if loaded is None and not _has_attempts(session, set_id):
        raise NotFound(f"No challenge set {set_id!r}.")
    totals = item_totals(session, set_id) if totals is None else totals
    answers = answer_counts(session, set_id) if answers is None else answers
    served = catalog.version_of("set", set_id) if loaded else None
    seen = {version for (row_set, version, _) in totals if row_set == set_id}
    versions = [v for v in _versions_newest_first(session, set_id) if v in seen]
    if served in versions:  # the version learners meet now comes first
        versions.remove(served)
        versions.insert(0, served)
    if not versions and loaded:  # nothing finished yet: the served items, with no answers
        versions = [served]
    rows = []
    for version in versions:
        # An attempt with no version of its own (from before versions) was served the live set.
        as_taken = catalog.get(set_id, version) if version is not None else loaded
        rows += _version_rows(set_id, version, as_taken, totals, answers)
    return rows


def _version_rows(
    set_id: str,
    version: str | None,
    loaded: LoadedSet | None,
    totals: dict[ItemKey, rules.ItemTotals],
    answers: dict[ItemKey, dict[str, int]],
) -> list[ItemRow]:
    """One content version's item rows: its statistics, and its own keys marked; a
    parameterised item's row per variant answered, under its parameters."""
    here = (set_id, version)
    asked = [question for (row_set, v, question) in totals if (row_set, v) == here]
    items = _with_variants(loaded.challenge_set.items if loaded else [], asked)
    options = {
        item.id: [option.id for option in item.options]
        for item in items
        if isinstance(item, ChoiceBase)
    }
    known = {item.id: item for item in items}
    statistics = rules.item_statistics(
        [total for (row_set, v, _), total in totals.items() if (row_set, v) == here],
        list(known),
        options,
        {
            item_id: counts
            for (row_set, v, item_id), counts in answers.items()
            if (row_set, v) == here
        },
        {item.id: item.difficulty.value for item in items},
    )
    rows = []
    for stats in statistics:
        item = known.get(stats.item_id)
        if item is None:  # not in this version as served (or no longer kept): history counts
            rows.append(ItemRow(stats.item_id, "removed", stats, version=version))
            continue
        if isinstance(item, ChoiceBase):
            key = item.answer_ids
        else:  # a value given (numeric): marked when this version's key accepts it
            key = frozenset(a for a in stats.option_counts if attempt_rules.is_correct(item, a))
        kind = getattr(item, "kind", "choice")
        rows.append(
            ItemRow(item.title, kind, stats, key, has_hint=item.hint is not None, version=version)
        )
    return rows


def _with_variants(items: list[ItemBase], asked: list[str]) -> list[ItemBase]:
    """The items in order, a parameterised one replaced by each of its variants answered (its
    id "<item id>@<key>", its title followed by its parameters)."""
    answered: dict[str, list[str]] = defaultdict(list)
    for question in asked:
        item_id, _, key = question.partition(VARIANT_SEPARATOR)
        if key:
            answered[item_id].append(key)
    found: list[ItemBase] = []
    for item in items:
        labels = {variant.key: variant.label for variant in variants.variants_of(item)}
        shown = [key for key in labels if key and key in answered.get(item.id, [])]
        if not shown:
            found.append(item)
            continue
        for key in shown:
            rendered = variants.render(item, key)
            title = f"{rendered.title} ({labels[key]})"
            update = {"id": f"{item.id}{VARIANT_SEPARATOR}{key}", "title": title}
            found.append(rendered.model_copy(update=update))
    return found


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


def _members(class_id: int) -> Any:
    """The user ids of a class's members (a subquery)."""
    return select(col(Membership.user_id)).where(col(Membership.class_id) == class_id)


def first_pick_counts(
    session: Session, set_id: str | None = None, class_id: int | None = None
) -> dict[ItemKey, dict[str, int]]:
    """How often each answer was an item's first pick (its first submission), per item and
    content version, in finished attempts (of one class's members only, with class_id)."""
    statement = (
        select_columns(
            col(SetAttempt.set_id),
            VERSION,
            col(ItemAttempt.item_id),
            col(Submission.answer),
            func.count(),
        )
        .join(ItemAttempt, col(ItemAttempt.id) == col(Submission.item_attempt_id))
        .join(SetAttempt, col(SetAttempt.id) == col(ItemAttempt.set_attempt_id))
        .where(FINISHED, col(Submission.number) == 1)
        .group_by(col(SetAttempt.set_id), VERSION, col(ItemAttempt.item_id), col(Submission.answer))
    )
    if set_id is not None:
        statement = statement.where(col(SetAttempt.set_id) == set_id)
    if class_id is not None:
        statement = statement.where(col(SetAttempt.user_id).in_(_members(class_id)))
    counts: dict[ItemKey, dict[str, int]] = defaultdict(dict)
    for row_set, version, item_id, answer, count in session.execute(statement):
        counts[(row_set, version, item_id)][answer] = int(count)
    return counts


def misconception_rows(
    session: Session, catalog: Catalog, set_id: str | None = None, class_id: int | None = None
) -> list[rules.MisconceptionRow]:
    """Each misconception of the served sets (or one set) and, course-wide, of the topics'
    lesson checks, with how often the learners' (or one class's) first picks showed it, judged
    by the rule their results pages use, and the items and check questions exposing it."""
    counts = first_pick_counts(session, set_id, class_id)
    served = [catalog.get(set_id)] if set_id is not None else list(catalog.ordered())
    for loaded in served:  # items no one has answered yet still expose their misconceptions
        if loaded is not None:
            version = catalog.version_of("set", loaded.challenge_set.id)
            for item in loaded.challenge_set.items:
                counts.setdefault((loaded.challenge_set.id, version, item.id), {})
    records = []
    for (row_set, version, item_id), answers in counts.items():
        as_taken = catalog.get(row_set, version) if version is not None else catalog.get(row_set)
        taken = as_taken.challenge_set.item(item_id) if as_taken else None
        exposes = frozenset(
            option.misconception
            for option in getattr(taken, "options", [])
            if option.misconception is not None
        )
        if taken is None or not exposes:
            continue
        shown: dict[str, int] = defaultdict(int)
        for answer, count in answers.items():
            for name in set(attempt_rules.first_pick_misconceptions(taken, answer)):
                shown[name] += count
        records.append(
            rules.ItemFirstPicks(
                row_set, item_id, taken.title, exposes, sum(answers.values()), dict(shown)
            )
        )
    if set_id is None:
        records += lesson_check_first_picks(session, catalog, class_id)
    beliefs = {name: entry.belief for name, entry in catalog.misconceptions.items()}
    return rules.misconception_rows(records, beliefs)


def lesson_check_first_picks(
    session: Session, catalog: Catalog, class_id: int | None = None
) -> list[rules.ItemFirstPicks]:
    """Each lesson check question whose options name a misconception, with the learners' (or
    one class's) first answers to it, judged against the lesson served now (a check keeps no
    content version). The first answers live in each learner's check row, one row per learner
    and topic: those rows are read, not every try."""
    statement = select(col(LessonProgress.topic_id), col(LessonProgress.answer)).where(
        col(LessonProgress.step) == CHECK
    )
    if class_id is not None:
        statement = statement.where(col(LessonProgress.user_id).in_(_members(class_id)))
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for topic_id, text in session.exec(statement):
        # Only `missed` needs the key; the first answers are read as stored.
        first = lesson_rules.CheckTries.read(text, lambda _question, _answer: True).first
        for question_id, answer in first.items():
            counts[(topic_id, question_id)][answer] += 1
    records = []
    for topic in catalog.topics():
        lesson = topic.loaded_topic.topic.lesson if topic.loaded_topic else None
        for question in lesson.check if lesson is not None else []:
            exposes = frozenset(o.misconception for o in question.options if o.misconception)
            if not exposes:
                continue
            answers = counts.get((topic.id, question.id), {})
            shown: dict[str, int] = defaultdict(int)
            for answer, count in answers.items():
                for name in set(attempt_rules.first_pick_misconceptions(question, answer)):
                    shown[name] += count
            picks = sum(answers.values())
            records.append(
                rules.ItemFirstPicks(
                    topic.id, question.id, question.title, exposes, picks, dict(shown), True
                )
            )
    return records

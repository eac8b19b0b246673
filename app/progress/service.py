"""Read a learner's standing in every mode of every topic, in a fixed number of queries.

The home page's course path and the progress page need the same facts: per topic, what is done
in each step. Each table is read once, grouped (never once per topic): the timed sets'
standings, the untimed modes' answers, the quick quizzes, the review cards, the lab steps and
the lessons completed; the progress page adds one query for its activity calendar.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from sqlalchemy import ColumnElement, Select, String, bindparam, case, cast, func, union_all
from sqlalchemy import select as select_columns
from sqlalchemy.sql.elements import SQLCoreOperations
from sqlmodel import col

from app import reads
from app.attempts import service as attempts
from app.attempts.models import SetAttempt
from app.challenges.catalog import Catalog, TopicView
from app.db import UTCDateTime
from app.labs.models import LabRun, LabStepState
from app.lessons.models import CHECK, LessonProgress
from app.modes.models import ModeAnswer, Quiz
from app.progress import rules
from app.progress.rules import Step, StepKind, TopicPath
from app.review.models import CardSource, ReviewCard, ReviewLog

QUIZ_PASS = 0.8  # a quick quiz counts as done from this share right
LEARN_AHEAD = timedelta(minutes=1)  # as the review page counts "due" (flashcards: none)
CALENDAR_WEEKS = 12


def _flag(condition: ColumnElement[bool]) -> ColumnElement[int]:
    """1 where the condition holds, else 0: max() of it works on every database (PostgreSQL
    has no max(boolean))."""
    return func.max(case((condition, 1), else_=0))


_ANSWER_KEYS = (ModeAnswer.topic, ModeAnswer.mode, ModeAnswer.deck_id, ModeAnswer.item_id)
_ANSWERS = reads.Query(
    select_columns(
        *(col(key) for key in _ANSWER_KEYS),
        _flag(col(ModeAnswer.correct).is_(True)),
        func.max(col(ModeAnswer.points)),
        func.max(col(ModeAnswer.answered_at)),
    )
    .where(col(ModeAnswer.user_id) == bindparam("user_id"))
    .group_by(*(col(key) for key in _ANSWER_KEYS))
)
_FINISHED_QUIZ = col(Quiz.finished_at).is_not(None)
_QUIZZES = reads.Query(
    select_columns(
        col(Quiz.topic),
        col(Quiz.total),
        func.max(case((_FINISHED_QUIZ, col(Quiz.correct)), else_=-1)),
        func.max(col(Quiz.created_at)),
    )
    .where(col(Quiz.user_id) == bindparam("user_id"))
    .group_by(col(Quiz.topic), col(Quiz.total))
)
_DUE = UTCDateTime()  # bound times are compared as the column stores them
_CARDS = reads.Query(
    select_columns(
        col(ReviewCard.topic),
        col(ReviewCard.source),
        col(ReviewCard.state),
        func.count(),
        # Flashcards are due on the minute (their learning steps: "Again" waits its step), the
        # review of mistakes a minute ahead: each as its own page counts it.
        func.sum(
            case(
                (
                    col(ReviewCard.due)
                    <= case(
                        (
                            col(ReviewCard.source) == CardSource.FLASHCARD,
                            bindparam("now", type_=_DUE),
                        ),
                        else_=bindparam("due_by", type_=_DUE),
                    ),
                    1,
                ),
                else_=0,
            )
        ),
        func.max(col(ReviewCard.last_review)),
    )
    .where(col(ReviewCard.user_id) == bindparam("user_id"))
    .group_by(col(ReviewCard.topic), col(ReviewCard.source), col(ReviewCard.state))
)
# Per topic, whether the learner completed its lesson (passed its closing check) and when they
# last predicted an example or tried the check: a prediction is work in the lesson.
_LESSONS = reads.Query(
    select_columns(
        col(LessonProgress.topic_id),
        _flag((col(LessonProgress.step) == CHECK) & col(LessonProgress.completed_at).is_not(None)),
        func.max(col(LessonProgress.answered_at)),
    )
    .where(col(LessonProgress.user_id) == bindparam("user_id"))
    .group_by(col(LessonProgress.topic_id))
)
_LAB_STEPS = reads.Query(
    select_columns(
        col(LabStepState.lab_id),
        col(LabStepState.step_id),
        col(LabStepState.passed_at),
        col(LabStepState.updated_at),
    ).where(col(LabStepState.user_id) == bindparam("user_id"))
)


def _minutes(
    moment: SQLCoreOperations[datetime], user: SQLCoreOperations[int]
) -> Select[tuple[str]]:
    """The UTC minute (YYYY-MM-DD HH:MM) of each of a table's times since `since`, for one
    learner: the text of a stored time starts with it on SQLite and PostgreSQL alike. Minutes,
    not days, so that the day can be counted in the learner's zone afterwards (every zone's
    offset is a whole number of minutes)."""
    minute = func.substr(cast(moment, String), 1, 16)
    return select_columns(minute.label("minute")).where(
        user == bindparam("user_id"), moment >= bindparam("since")
    )


_ACTIVITY_ROWS = union_all(
    _minutes(col(SetAttempt.started_at), col(SetAttempt.user_id)),
    _minutes(col(ModeAnswer.answered_at), col(ModeAnswer.user_id)),
    _minutes(col(ReviewLog.reviewed_at), col(ReviewLog.user_id)),
    _minutes(col(LabRun.started_at), col(LabRun.user_id)),
    _minutes(col(Quiz.created_at), col(Quiz.user_id)),
    _minutes(col(LessonProgress.answered_at), col(LessonProgress.user_id)),
).subquery()
_ACTIVITY = reads.Query(
    select_columns(_ACTIVITY_ROWS.c.minute, func.count()).group_by(_ACTIVITY_ROWS.c.minute)
)


@dataclass
class _TopicRows:
    """One topic's rows, gathered from the grouped queries."""

    practice_right: set[tuple[str, str]] = field(default_factory=set)
    practice_last: datetime | None = None
    explain_best: dict[str, int] = field(default_factory=dict)
    explain_right: set[str] = field(default_factory=set)
    explain_last: datetime | None = None
    quiz_best: tuple[int, int] | None = None
    quiz_last: datetime | None = None
    cards_seen: int = 0
    cards_learned: int = 0
    cards_due: int = 0
    cards_last: datetime | None = None
    mistakes_due: int = 0


def _later(one: datetime | None, other: datetime | None) -> datetime | None:
    return max((t for t in (one, other) if t is not None), default=None)


@dataclass(frozen=True)
class Standing:
    """Everything a learner has done, as read (before it is laid out per topic)."""

    sets: Mapping[str, attempts.SetStanding]
    topics: Mapping[str, _TopicRows]
    lab_steps: Mapping[tuple[str, str], tuple[datetime | None, datetime]]
    lessons: set[str]  # the topics whose lesson is completed
    lessons_last: Mapping[str, datetime] = field(default_factory=dict)  # last lesson work


def read_standing(reader: reads.Reader, user_id: int, now: datetime) -> Standing:
    """Read the learner's rows of every mode: six grouped queries, whatever they have done."""
    lessons, lessons_last = set(), {}
    for topic_id, completed, last in reader.rows(_LESSONS, user_id=user_id):
        if completed:
            lessons.add(topic_id)
        lessons_last[topic_id] = last
    topics: dict[str, _TopicRows] = {}

    def rows_of(topic: str) -> _TopicRows:
        return topics.setdefault(topic, _TopicRows())

    for topic, mode, deck, item, right, points, last in reader.rows(_ANSWERS, user_id=user_id):
        rows = rows_of(topic)
        if mode == "practice":
            if right:
                rows.practice_right.add((deck, item))
            rows.practice_last = _later(rows.practice_last, last)
        elif mode == "explain":
            rows.explain_best[item] = max(rows.explain_best.get(item, 0), int(points or 0))
            if right:
                rows.explain_right.add(item)
            rows.explain_last = _later(rows.explain_last, last)
    for topic, total, best, last in reader.rows(_QUIZZES, user_id=user_id):
        rows = rows_of(topic)
        rows.quiz_last = _later(rows.quiz_last, last)
        if best >= 0 and total:
            known = rows.quiz_best
            if known is None or best / total > known[0] / known[1]:
                rows.quiz_best = (int(best), int(total))
    due_by = now + LEARN_AHEAD
    for topic, source, state, count, due, last in reader.rows(
        _CARDS, user_id=user_id, due_by=due_by, now=now
    ):
        rows = rows_of(topic)
        if source == CardSource.FLASHCARD:
            rows.cards_seen += int(count)
            rows.cards_due += int(due or 0)
            rows.cards_learned += int(count) if state == _REVIEW_STATE else 0
            rows.cards_last = _later(rows.cards_last, last)
        else:
            rows.mistakes_due += int(due or 0)
    lab_steps = {
        (lab, step): (passed, updated)
        for lab, step, passed, updated in reader.rows(_LAB_STEPS, user_id=user_id)
    }
    sets = attempts.standings(reader, user_id)
    return Standing(sets, topics, lab_steps, lessons, lessons_last)


_REVIEW_STATE = 2  # FSRS's State.Review: a card past its learning steps (app.review.scheduling)


def activity(reader: reads.Reader, user_id: int, today: date, zone: tzinfo) -> dict[date, int]:
    """How many things the learner did on each day of the calendar's weeks, days counted in the
    learner's zone (`today` is the zone's date): one query, grouped by minute."""
    first = calendar_start(today)
    since = datetime.combine(first, time.min, tzinfo=zone).astimezone(UTC)
    days: dict[date, int] = {}
    for minute, count in reader.rows(_ACTIVITY, user_id=user_id, since=since):
        moment = datetime.strptime(str(minute)[:16], "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
        day = moment.astimezone(zone).date()
        days[day] = days.get(day, 0) + int(count)
    return days


def calendar_start(today: date) -> date:
    """The Monday CALENDAR_WEEKS - 1 weeks before this week's."""
    return today - timedelta(days=today.weekday(), weeks=CALENDAR_WEEKS - 1)


# Laying it out per topic ---------------------------------------------------------------------


def path_of(catalog: Catalog, standing: Standing | None) -> list[TopicPath]:
    """Every topic in path order with its steps and the learner's state in each (a visitor:
    nothing done)."""
    return [topic_path(topic, standing) for topic in catalog.topics()]


def topic_path(topic: TopicView, standing: Standing | None) -> TopicPath:
    """One topic's steps in teaching order, each as done as the learner's rows say."""
    rows = (standing.topics.get(topic.id) if standing else None) or _TopicRows()
    base = f"/topics/{topic.id}"
    steps: list[Step] = []
    if topic.loaded_topic is not None and topic.loaded_topic.topic.lesson is not None:
        done = standing is not None and topic.id in standing.lessons
        last = standing.lessons_last.get(topic.id) if standing else None
        started = done or last is not None
        steps.append(Step(StepKind.LESSON, f"{base}/lesson", done, started, "", last))
    if topic.practice:
        steps.append(_practice_step(topic, rows))
    if topic.cards:
        steps.append(_cards_step(topic, rows))
    if topic.practice or topic.cards:
        steps.append(_quiz_step(topic, rows))
    if topic.explain:
        steps.append(_explain_step(topic, rows))
    if topic.labs:
        steps.append(_lab_step(topic, standing))
    if topic.sets:
        steps.append(_timed_step(topic, standing))
    return TopicPath(topic.id, topic.title, tuple(steps), topic.requires)


def _practice_step(topic: TopicView, rows: _TopicRows) -> Step:
    """Practice: done when every question was answered right (in practice) at least once."""
    right = sum((e.deck, e.item.id) in rows.practice_right for e in topic.practice)
    total = len(topic.practice)
    detail = f"{right}/{total}"
    started = rows.practice_last is not None
    href = f"/topics/{topic.id}/practice"
    return Step(StepKind.PRACTICE, href, right >= total, started, detail, rows.practice_last)


def _cards_step(topic: TopicView, rows: _TopicRows) -> Step:
    """Flashcards: done when every card was studied; learned ones are past FSRS's learning
    steps (they may still come back for review)."""
    total = len(topic.cards)
    seen, learned = min(rows.cards_seen, total), min(rows.cards_learned, total)
    detail = f"{learned}/{total}" + (f" ({seen} studied)" if seen else "")
    href = f"/topics/{topic.id}/flashcards"
    return Step(StepKind.FLASHCARDS, href, seen >= total, seen > 0, detail, rows.cards_last)


def _quiz_step(topic: TopicView, rows: _TopicRows) -> Step:
    """Quick quiz: done once a finished quiz scored QUIZ_PASS or more."""
    best = rows.quiz_best
    passed = best is not None and best[0] >= QUIZ_PASS * best[1]
    detail = f"{best[0]}/{best[1]}" if best else "not taken"
    started = rows.quiz_last is not None
    return Step(StepKind.QUIZ, f"/topics/{topic.id}/quiz", passed, started, detail, rows.quiz_last)


def _explain_step(topic: TopicView, rows: _TopicRows) -> Step:
    """Explain-it: done when every item was once explained covering its concepts."""
    bests = [
        f"{rows.explain_best[e.item.id]}/{len(getattr(e.item, 'concepts', []))}"
        for e in topic.explain
        if e.item.id in rows.explain_best
    ]
    done = all(entry.item.id in rows.explain_right for entry in topic.explain)
    detail = ", ".join(bests) if bests else "not tried"
    href = f"/topics/{topic.id}/explain"
    return Step(StepKind.EXPLAIN, href, done, bool(bests), detail, rows.explain_last)


def _lab_step(topic: TopicView, standing: Standing | None) -> Step:
    """Labs: done when every step of every lab is passed; counts lab steps passed (a lab is
    long: "1/4 steps" says what one step of it did); leads to the first lab not done."""
    found = standing.lab_steps if standing else {}
    passed_steps, total, last, first_open = 0, 0, None, None
    for loaded in topic.labs:
        lab = loaded.lab
        states = [found.get((lab.id, step.id)) for step in lab.steps]
        passed = sum(state is not None and state[0] is not None for state in states)
        passed_steps, total = passed_steps + passed, total + len(states)
        if passed < len(states) and first_open is None:
            first_open = lab.id
        for state in states:
            if state is not None:
                last = _later(last, state[1])
    href = f"/labs/{first_open or topic.labs[0].lab.id}"
    return Step(StepKind.LAB, href, passed_steps == total, last is not None,
                f"{passed_steps}/{total} steps", last)  # fmt: skip


def _timed_step(topic: TopicView, standing: Standing | None) -> Step:
    """Timed sets: done when every set's badge is earned; leads to the first set without."""
    sets = standing.sets if standing else {}
    badges, last, first_open = 0, None, None
    for facts in topic.sets:
        found = sets.get(facts.set.id)
        if found is not None and found.badge:
            badges += 1
        elif first_open is None:
            first_open = facts.set.id
        if found is not None:
            last = _later(last, found.last_started)
    total = len(topic.sets)
    detail = f"{badges}/{total}"
    href = f"/sets/{first_open or topic.sets[0].set.id}"
    return Step(StepKind.TIMED, href, badges == total, last is not None, detail, last)


def open_attempt(catalog: Catalog, standing: Standing | None) -> rules.OpenAttempt | None:
    """The learner's latest unfinished timed attempt, if any."""
    if standing is None:
        return None
    open_sets = [(s.active_attempt_id, set_id) for set_id, s in standing.sets.items()
                 if s.active_attempt_id is not None]  # fmt: skip
    if not open_sets:
        return None
    attempt_id, set_id = max(open_sets)
    loaded, topic = catalog.get(set_id), catalog.topic_of(set_id)
    title = loaded.challenge_set.title if loaded else set_id
    return rules.OpenAttempt(attempt_id, title, topic.id if topic else None)


def next_step_of(
    reader: reads.Reader, catalog: Catalog, user_id: int, now: datetime
) -> rules.NextStep | None:
    """The learner's one next step (rules.next_step): every page that offers a next step shows
    this one, so home, progress, results, a finished lab and a finished lesson agree."""
    standing = read_standing(reader, user_id, now)
    return rules.next_step(path_of(catalog, standing), open_attempt(catalog, standing))

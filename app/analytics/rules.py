"""Item analysis and activity summaries: pure functions over plain records.

Pure: the standard library and the attempts' pure rules only (an import-linter contract), so every
statistic can be checked against numbers worked out by hand, without a database.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from app.attempts import rules as attempt_rules

ItemStatus = attempt_rules.ItemStatus


@dataclass(frozen=True)
class AttemptRecord:
    """One set attempt, as the summaries need it."""

    attempt_id: int
    user_id: int
    set_id: str
    started_at: datetime
    finished_at: datetime | None
    correct: int
    total: int
    badge: bool

    @property
    def score_percent(self) -> float:
        """The attempt's score as a percentage of its items."""
        return 100 * self.correct / self.total if self.total else 0.0


@dataclass(frozen=True)
class ItemRecord:
    """One question of one finished attempt, with every answer submitted for it."""

    attempt_id: int
    item_id: str
    status: attempt_rules.ItemStatus
    started_at: datetime | None
    closed_at: datetime | None
    time_limit_s: float | None
    hint_shown: bool
    answers: tuple[str, ...] = ()

    @property
    def score(self) -> int:
        """1 for a correct answer, else 0 (every item weighs the same)."""
        return 1 if self.status is ItemStatus.CORRECT else 0


@dataclass(frozen=True)
class ItemStatistics:
    """How one item performed over the finished attempts that included it."""

    item_id: str
    attempts: int
    facility: float | None
    discrimination: float | None
    mean_seconds: float | None
    timeouts: int
    hints: int
    option_counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SetSummary:
    """Attempts at one set: how many, how many finished, badges and the mean score."""

    attempts: int
    completions: int
    badges: int
    badge_rate: float | None
    mean_score: float | None
    best_score: float | None


@dataclass(frozen=True)
class DayActivity:
    """What happened on one UTC day."""

    day: date
    started: int
    completed: int
    badges: int


def mean(values: Sequence[float]) -> float | None:
    """Return the arithmetic mean, or None for no values."""
    return sum(values) / len(values) if values else None


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Return Pearson's r, or None when it is undefined (under 2 pairs, or a constant series)."""
    if len(xs) != len(ys):
        raise ValueError("pearson needs two series of the same length")
    n = len(xs)
    if n < 2:
        return None
    # The sums form, not the centred one: with whole-number scores every sum is exact, so an
    # uncorrelated item gives exactly 0 (never -0.0) and a constant series exactly no variance.
    sum_x, sum_y = sum(xs), sum(ys)
    covariance = n * sum(x * y for x, y in zip(xs, ys, strict=True)) - sum_x * sum_y
    spread_x = n * sum(x * x for x in xs) - sum_x * sum_x
    spread_y = n * sum(y * y for y in ys) - sum_y * sum_y
    if spread_x <= 0 or spread_y <= 0:
        return None
    return covariance / math.sqrt(spread_x * spread_y)


def facility_index(scores: Sequence[float]) -> float | None:
    """Return Moodle's facility index: the mean item score as a percentage of its maximum (1)."""
    average = mean(scores)
    return None if average is None else 100 * average


def discrimination_index(item_scores: Sequence[float], totals: Sequence[float]) -> float | None:
    """Return Moodle's discrimination index: 100 × r(item score, rest-of-test score).

    The rest of the test is the attempt's total minus this item, so an item is not correlated
    with itself (which would flatter every item, most of all in short sets).
    """
    rest = [total - score for score, total in zip(item_scores, totals, strict=True)]
    r = pearson(item_scores, rest)
    return None if r is None else 100 * r


def seconds_to_answer(record: ItemRecord) -> float | None:
    """Return how long the question was open, or None if it was never answered nor timed out."""
    if record.status not in (ItemStatus.CORRECT, ItemStatus.INCORRECT, ItemStatus.TIMED_OUT):
        return None
    if record.started_at is None or record.closed_at is None:
        return None
    seconds = (record.closed_at - record.started_at).total_seconds()
    if record.status is ItemStatus.TIMED_OUT and record.time_limit_s is not None:
        # A time-out is recorded when the learner (or the page) next asks, maybe hours later;
        # the learner's time on the question was the limit, not the gap.
        seconds = min(seconds, record.time_limit_s)
    return seconds


def option_counts(answers: Iterable[str], option_ids: Sequence[str] = ()) -> dict[str, int]:
    """Count how often each option was chosen; a multi-answer "A,C" counts for A and for C."""
    counts = dict.fromkeys(option_ids, 0)  # every option listed, in order, even when unchosen
    for answer in answers:
        for part in answer.split(",") if option_ids else [answer]:
            counts[part] = counts.get(part, 0) + 1
    return counts


def item_statistics(
    records: Iterable[ItemRecord],
    item_order: Sequence[str] = (),
    options: Mapping[str, Sequence[str]] | None = None,
) -> list[ItemStatistics]:
    """Compute every item's statistics; records must come from finished attempts only.

    Items come in item_order, then any others seen in the records (an item since removed from
    the set still has history). options maps an item to its option letters (choice items).
    """
    by_item: dict[str, list[ItemRecord]] = defaultdict(list)
    totals: dict[int, int] = defaultdict(int)
    for record in records:
        by_item[record.item_id].append(record)
        totals[record.attempt_id] += record.score
    order = list(item_order) + sorted(set(by_item) - set(item_order))
    result = []
    for item_id in order:
        rows = by_item.get(item_id, [])
        scores = [row.score for row in rows]
        durations = [s for s in map(seconds_to_answer, rows) if s is not None]
        answers = [answer for row in rows for answer in row.answers]
        result.append(
            ItemStatistics(
                item_id=item_id,
                attempts=len(rows),
                facility=facility_index(scores),
                discrimination=discrimination_index(
                    scores, [totals[row.attempt_id] for row in rows]
                ),
                mean_seconds=mean(durations),
                timeouts=sum(row.status is ItemStatus.TIMED_OUT for row in rows),
                hints=sum(row.hint_shown for row in rows),
                option_counts=option_counts(answers, (options or {}).get(item_id, ())),
            )
        )
    return result


def set_summary(attempts: Iterable[AttemptRecord]) -> SetSummary:
    """Summarise attempts at one set; the rates and the mean count finished attempts only."""
    listed = list(attempts)
    finished = [attempt for attempt in listed if attempt.finished_at is not None]
    badges = sum(attempt.badge for attempt in finished)
    return SetSummary(
        attempts=len(listed),
        completions=len(finished),
        badges=badges,
        badge_rate=100 * badges / len(finished) if finished else None,
        mean_score=mean([attempt.score_percent for attempt in finished]),
        best_score=max((attempt.score_percent for attempt in finished), default=None),
    )


def first_badges(attempts: Iterable[AttemptRecord]) -> list[AttemptRecord]:
    """Return the attempt that first earned each (learner, set) badge: a badge is awarded once."""
    earned = sorted(
        (attempt for attempt in attempts if attempt.badge and attempt.finished_at is not None),
        key=lambda attempt: (attempt.finished_at or attempt.started_at, attempt.attempt_id),
    )
    first: dict[tuple[int, str], AttemptRecord] = {}
    for attempt in earned:
        first.setdefault((attempt.user_id, attempt.set_id), attempt)
    return list(first.values())


@dataclass(frozen=True)
class LearnerSummary:
    """One learner's progress over every set."""

    attempts: int
    completions: int
    badges: int
    mean_score: float | None
    last_active: datetime | None


def learner_summary(attempts: Iterable[AttemptRecord]) -> LearnerSummary:
    """Summarise one learner's attempts; badges count distinct sets, as the learner sees them."""
    listed = list(attempts)
    finished = [attempt for attempt in listed if attempt.finished_at is not None]
    moments = [attempt.finished_at or attempt.started_at for attempt in listed]
    return LearnerSummary(
        attempts=len(listed),
        completions=len(finished),
        badges=len(first_badges(listed)),
        mean_score=mean([attempt.score_percent for attempt in finished]),
        last_active=max(moments) if moments else None,
    )


def by_set(attempts: Iterable[AttemptRecord]) -> dict[str, list[AttemptRecord]]:
    """Group attempts by set id, keeping their order."""
    groups: dict[str, list[AttemptRecord]] = defaultdict(list)
    for attempt in attempts:
        groups[attempt.set_id].append(attempt)
    return dict(groups)


def daily_activity(attempts: Iterable[AttemptRecord]) -> list[DayActivity]:
    """Count attempts started, completed and badges awarded per UTC day, with quiet days as 0."""
    listed = list(attempts)
    started: dict[date, int] = defaultdict(int)
    completed: dict[date, int] = defaultdict(int)
    badges: dict[date, int] = defaultdict(int)
    for attempt in listed:
        started[attempt.started_at.date()] += 1
        if attempt.finished_at is not None:
            completed[attempt.finished_at.date()] += 1
    for attempt in first_badges(listed):
        assert attempt.finished_at is not None
        badges[attempt.finished_at.date()] += 1
    days = set(started) | set(completed)
    if not days:
        return []
    first_day, last_day = min(days), max(days)
    # Every day in the range, so a chart's x axis is true to time.
    span = [first_day + timedelta(days=n) for n in range((last_day - first_day).days + 1)]
    return [DayActivity(day, started[day], completed[day], badges[day]) for day in span]

"""Item analysis and activity summaries: pure functions over the sums the database adds up.

The queries (app.analytics.service) aggregate in SQL, so a dashboard never loads every attempt;
what is left is arithmetic on a few sums per item, set or learner. Pure: the standard library
only (an import-linter contract), so every statistic can be checked against numbers worked out
by hand, without a database.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta


@dataclass(frozen=True)
class AttemptTotals:
    """Sums over a group of attempts (one set's, one learner's), as the database adds them up."""

    attempts: int
    completions: int
    badges: int  # finished attempts that earned the badge
    badge_sets: int  # distinct sets whose badge was earned
    score_sum: float  # the sum of the finished attempts' scores, in percent
    best_score: float | None  # the best finished attempt's score, in percent


@dataclass(frozen=True)
class ItemTotals:
    """Sums over one item's questions in finished attempts, as the database adds them up.

    For the discrimination index, x is 1 for an item right in the end (at any try), else 0,
    and y the rest of the test (the attempt's number right minus x); since x is 0 or 1, the sum
    of x² is the sum of x. The facility uses `credit`, the item's score as the results page
    counts it (app.attempts.rules.credit), so facility and mean score share one definition.
    """

    item_id: str
    attempts: int  # n
    correct: int  # Σx
    rest: int  # Σy
    correct_times_rest: int  # Σxy
    rest_squared: int  # Σy²
    timed: int = 0  # questions answered or timed out, with both times known
    seconds: float = 0.0  # their seconds to answer, a time-out counting as its limit
    timeouts: int = 0
    hints: int = 0
    first_try: int = 0  # right at the first try
    credit: float = 0.0  # Σ the questions' credit as the results page scores it (1, ⅔, ⅓, 0)


@dataclass(frozen=True)
class ItemStatistics:
    """How one item performed over the finished attempts that included it."""

    item_id: str
    attempts: int
    facility: float | None  # 100 × the mean credit: the item's mean score, as learners saw it
    discrimination: float | None
    mean_seconds: float | None
    timeouts: int
    hints: int
    option_counts: dict[str, int] = field(default_factory=dict)
    # The percentage right at the first try: with options shuffled, the share a retry cannot
    # lift (a guess that the key was "the other one" shows in facility, not here).
    first_try_facility: float | None = None
    label_mismatch: str | None = None  # the facility contradicts the difficulty label


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


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Return Pearson's r, or None when it is undefined (under 2 pairs, or a constant series)."""
    if len(xs) != len(ys):
        raise ValueError("pearson needs two series of the same length")
    return pearson_from_sums(
        len(xs),
        sum(xs),
        sum(ys),
        sum(x * y for x, y in zip(xs, ys, strict=True)),
        sum(x * x for x in xs),
        sum(y * y for y in ys),
    )


def pearson_from_sums(
    n: int, sum_x: float, sum_y: float, sum_xy: float, sum_xx: float, sum_yy: float
) -> float | None:
    """Return Pearson's r from the sums a database can add up, or None when it is undefined."""
    if n < 2:
        return None
    # The sums form, not the centred one: with whole-number scores every sum is exact, so an
    # uncorrelated item gives exactly 0 (never -0.0) and a constant series exactly no variance.
    covariance = n * sum_xy - sum_x * sum_y
    spread_x = n * sum_xx - sum_x * sum_x
    spread_y = n * sum_yy - sum_y * sum_y
    if spread_x <= 0 or spread_y <= 0:
        return None
    return covariance / math.sqrt(spread_x * spread_y)


# A difficulty label is checked against the facility once this many finished attempts answered
# the item: below that, one class's luck decides (with 20, one answer moves the facility 5 points).
MIN_ANSWERS_FOR_LABEL = 20
# The facility (percent right) each label allows. Classical item analysis calls an item easy
# above 80 % and hard below 30 %; a label is contradicted when the item sits at the wrong end:
# an expert item most learners get right, an advanced one almost all do, a beginner item that
# fewer get right than guessing among 2-4 options would (25-50 %), an intermediate one at
# either extreme. Between those ends, a facility says little about which label fits.
FACILITY_BANDS: dict[str, tuple[float, float]] = {
    "beginner": (30.0, 100.0),
    "intermediate": (20.0, 95.0),
    "advanced": (0.0, 90.0),
    "expert": (0.0, 80.0),
}


def label_mismatch(difficulty: str | None, facility: float | None, answers: int) -> str | None:
    """Why an item's facility contradicts its difficulty label, or None (also when fewer than
    MIN_ANSWERS_FOR_LABEL answered it)."""
    if difficulty not in FACILITY_BANDS or facility is None or answers < MIN_ANSWERS_FOR_LABEL:
        return None
    lowest, highest = FACILITY_BANDS[difficulty]
    scored = f"its facility is {facility:.0f} %"
    if facility > highest:
        return f"labelled {difficulty}, but {scored} (over {highest:.0f} %)"
    if facility < lowest:
        return f"labelled {difficulty}, but {scored} (under {lowest:.0f} %)"
    return None


def option_counts(answers: Mapping[str, int], option_ids: Sequence[str] = ()) -> dict[str, int]:
    """Count how often each option was chosen, from each answer's number of submissions.

    A multi-answer "A,C" counts for A and for C; every option is listed, in order, even when
    nobody chose it. Numeric items have no options: each value given is counted as it is.
    """
    counts = dict.fromkeys(option_ids, 0)
    for answer, times in answers.items():
        for part in answer.split(",") if option_ids else [answer]:
            counts[part] = counts.get(part, 0) + times
    return counts


def item_statistics(
    totals: Iterable[ItemTotals],
    item_order: Sequence[str] = (),
    options: Mapping[str, Sequence[str]] | None = None,
    answers: Mapping[str, Mapping[str, int]] | None = None,
    difficulty: Mapping[str, str] | None = None,
) -> list[ItemStatistics]:
    """Compute every item's statistics from its sums over finished attempts only.

    Items come in item_order, then any others seen in the totals (an item since removed from
    the set still has history). options maps an item to its option letters (choice items);
    answers maps an item to how often each answer was submitted; difficulty maps an item to
    its label, checked against its facility.
    """
    by_item = {total.item_id: total for total in totals}
    order = list(item_order) + sorted(set(by_item) - set(item_order))
    result = []
    for item_id in order:
        total = by_item.get(item_id, ItemTotals(item_id, 0, 0, 0, 0, 0))
        n = total.attempts
        r = pearson_from_sums(
            n,
            total.correct,
            total.rest,
            total.correct_times_rest,
            total.correct,  # x is 0 or 1: Σx² = Σx
            total.rest_squared,
        )
        result.append(
            ItemStatistics(
                item_id=item_id,
                attempts=n,
                facility=(facility := 100 * total.credit / n if n else None),
                discrimination=None if r is None else 100 * r,
                mean_seconds=total.seconds / total.timed if total.timed else None,
                timeouts=total.timeouts,
                hints=total.hints,
                option_counts=option_counts(
                    (answers or {}).get(item_id, {}), (options or {}).get(item_id, ())
                ),
                first_try_facility=100 * total.first_try / n if n else None,
                label_mismatch=label_mismatch((difficulty or {}).get(item_id), facility, n),
            )
        )
    return result


def set_summary(totals: AttemptTotals) -> SetSummary:
    """Summarise attempts at one set; the rates and the mean count finished attempts only."""
    finished = totals.completions
    return SetSummary(
        attempts=totals.attempts,
        completions=finished,
        badges=totals.badges,
        badge_rate=100 * totals.badges / finished if finished else None,
        mean_score=totals.score_sum / finished if finished else None,
        best_score=totals.best_score if finished else None,
    )


@dataclass(frozen=True)
class LearnerSummary:
    """One learner's progress over every set."""

    attempts: int
    completions: int
    badges: int
    mean_score: float | None
    last_active: datetime | None


def learner_summary(totals: AttemptTotals, last_active: datetime | None) -> LearnerSummary:
    """Summarise one learner's attempts; badges count distinct sets, as the learner sees them."""
    finished = totals.completions
    return LearnerSummary(
        attempts=totals.attempts,
        completions=finished,
        badges=totals.badge_sets,
        mean_score=totals.score_sum / finished if finished else None,
        last_active=last_active,
    )


NO_ATTEMPTS = AttemptTotals(0, 0, 0, 0, 0.0, None)


def daily_activity(
    started: Mapping[date, int], completed: Mapping[date, int], badges: Mapping[date, int]
) -> list[DayActivity]:
    """List attempts started, completed and badges first awarded per UTC day, quiet days as 0."""
    days = set(started) | set(completed) | set(badges)
    if not days:
        return []
    first_day, last_day = min(days), max(days)
    # Every day in the range, so a chart's x axis is true to time.
    span = [first_day + timedelta(days=n) for n in range((last_day - first_day).days + 1)]
    return [
        DayActivity(day, started.get(day, 0), completed.get(day, 0), badges.get(day, 0))
        for day in span
    ]


@dataclass(frozen=True)
class ItemFirstPicks:
    """One item's first picks, as the misconception dashboard counts them: a set's item, or a
    question of a topic's lesson check (`set_id` is then the topic's id)."""

    set_id: str
    item_id: str
    title: str
    exposes: frozenset[str]  # the misconceptions its distractors stand for
    first_picks: int  # first answers given to it (in finished attempts; any lesson check try)
    shown: Mapping[str, int] = field(default_factory=dict)  # misconception -> picks showing it
    lesson_check: bool = False  # a lesson check's question, not a set's item


@dataclass(frozen=True)
class MisconceptionRow:
    """One misconception on the dashboard: how often it was picked first, and where."""

    id: str
    belief: str
    picked_first: int  # first picks that chose a distractor standing for it
    first_picks: int  # every first pick on the items exposing it
    items: tuple[tuple[str, str, str], ...]  # (set id, item id, title) of each item exposing it
    # (topic id, question id, title) of each lesson check question exposing it
    checks: tuple[tuple[str, str, str], ...] = ()

    @property
    def share(self) -> float | None:
        """Its first picks as a percentage of the first picks on the items exposing it."""
        return 100 * self.picked_first / self.first_picks if self.first_picks else None


def misconception_rows(
    items: Iterable[ItemFirstPicks], beliefs: Mapping[str, str]
) -> list[MisconceptionRow]:
    """Add up each misconception over the items exposing it (one item's versions pooled), most
    picked first; a misconception the catalogue no longer has keeps its id as its belief."""
    picked: dict[str, int] = {}
    picks: dict[str, int] = {}
    where: dict[str, dict[tuple[bool, str, str], str]] = {}
    for item in items:
        for name in item.exposes:
            picked[name] = picked.get(name, 0) + item.shown.get(name, 0)
            picks[name] = picks.get(name, 0) + item.first_picks
            place = (item.lesson_check, item.set_id, item.item_id)
            where.setdefault(name, {}).setdefault(place, item.title)
    rows = [
        MisconceptionRow(
            name,
            beliefs.get(name, name),
            picked[name],
            picks[name],
            tuple(
                (deck, one, title) for (check, deck, one), title in where[name].items() if not check
            ),
            tuple((deck, one, title) for (check, deck, one), title in where[name].items() if check),
        )
        for name in picked
    ]
    return sorted(rows, key=lambda row: (-row.picked_first, -(row.share or 0.0), row.id))

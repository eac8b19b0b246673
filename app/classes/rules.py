"""Pure rules for classes: join codes, assignment windows, the late rule, roster rows."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from enum import StrEnum

# No 0/O, 1/I/L: a code read aloud in a lecture hall or copied from a slide is typed right.
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
SECONDS_PER_DAY = 86400.0


def new_join_code() -> str:
    """A random class code (31^8 ≈ 8.5e11 codes: not guessable by trying)."""
    return "".join(secrets.choice(_CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalise_code(raw: str) -> str:
    """The code as stored: upper case, spaces and dashes dropped."""
    return re.sub(r"[\s-]", "", raw).upper()


@dataclass(frozen=True)
class Window:
    """An assignment's dates for one learner (an extension applied)."""

    open_at: datetime
    due_at: datetime
    close_at: datetime


@dataclass(frozen=True)
class Allowance:
    """A learner's exception for one assignment: later dates and/or a time multiplier; from
    their own extension ("own") or from their groups' ("group" and the groups' names)."""

    time_multiplier: float | None  # None: untimed
    due_at: datetime | None
    close_at: datetime | None
    source: str

    @property
    def from_groups(self) -> bool:
        """Whether it comes from the learner's groups (not their own extension)."""
        return self.source.startswith("group ")


def allowance(own: Allowance | None, groups: Sequence[Allowance]) -> Allowance | None:
    """The exception a learner has, as Moodle resolves overrides: their own extension wins
    whole over their groups'; among several groups, the latest date and the largest
    multiplier (untimed beats any) each count, even from different groups."""
    if own is not None:
        return own
    if not groups:
        return None
    multipliers = [group.time_multiplier for group in groups]
    dues = [group.due_at for group in groups if group.due_at is not None]
    closes = [group.close_at for group in groups if group.close_at is not None]
    return Allowance(
        None if None in multipliers else max(m for m in multipliers if m is not None),
        max(dues, default=None),
        max(closes, default=None),
        "group " + ", ".join(sorted(group.source for group in groups)),
    )


def more_time(account: float | None, granted: Allowance | None) -> float | None:
    """The more generous of the account's accommodation and the assignment's exception (None:
    untimed), so an exception that only moves dates never takes an accommodation away."""
    if granted is None:
        return account
    if account is None or granted.time_multiplier is None:
        return None
    return max(account, granted.time_multiplier)


def start_refusal(
    window: Window, now: datetime, attempts_used: int, limit: int | None
) -> str | None:
    """Why a learner may not start the assignment now, or None when they may."""
    if now < window.open_at:
        return f"This assignment opens on {window.open_at:%Y-%m-%d %H:%M} UTC."
    if now >= window.close_at:
        return "This assignment has closed: no more attempts are accepted."
    if limit is not None and attempts_used >= limit:
        return f"You have used all {limit} attempts this assignment allows."
    return None


def late_factor(window: Window, finished_at: datetime, penalty_percent_per_day: float) -> float:
    """What share of an attempt's score counts: 1 by the due date, less a penalty per day
    (or part of a day) late, 0 after the close date or when the penalty has taken it all."""
    if finished_at <= window.due_at:
        return 1.0
    if finished_at > window.close_at:
        return 0.0
    late_s = (finished_at - window.due_at).total_seconds()
    days = -(-late_s // SECONDS_PER_DAY)  # a part of a day counts as a day
    return max(0.0, 1.0 - penalty_percent_per_day * days / 100.0)


class Status(StrEnum):
    """Where a learner stands with an assignment; the per-assignment view sorts by it, the
    ones that need the instructor first."""

    MISSING = "missing after close"
    NOT_STARTED = "not started"
    IN_PROGRESS = "in progress"
    LATE = "late"
    ON_TIME = "submitted on time"


STATUS_ORDER = tuple(Status)


def status(window: Window, now: datetime, started: bool, submitted_at: datetime | None) -> Status:
    """A learner's status: submitted (on time or late) once their work is in, else missing
    after the (their) close date, else in progress or not started."""
    if submitted_at is not None:
        return Status.ON_TIME if submitted_at <= window.due_at else Status.LATE
    if now >= window.close_at:
        return Status.MISSING
    return Status.IN_PROGRESS if started else Status.NOT_STARTED


@dataclass(frozen=True)
class TopicPart:
    """One scored part of a topic for one learner: its score (0 to 100) with the late rule
    applied to each piece of work, and when it was all done (None: not yet)."""

    name: str
    score: float
    started: bool
    completed_at: datetime | None


SET_SCORE_WORDS = (
    "A set's score is its best finished attempt since the assignment opened, as that attempt's "
    "results page shows it, times the late factor for when it was finished."
)
LATE_RULE_WORDS = (
    "Late factor: 1 by the due date, less the late penalty for each day or part of a day after "
    "it, 0 after the close date (a learner's extension moves their dates)."
)
TOPIC_SCORE_WORDS = (
    "A topic's score is the mean of its scored parts: its lesson (100 once its check is "
    "passed), its labs (the share of lab steps passed) and each of its timed sets (the best "
    "finished attempt); only work since the assignment opened counts, each piece under the late "
    "rule for when it was done."
)


def topic_score(parts: Sequence[TopicPart]) -> float | None:
    """The mean of the parts' scores (None: nothing begun, or a topic with no scored part)."""
    if not parts or not any(part.started for part in parts):
        return None
    return sum(part.score for part in parts) / len(parts)


def topic_submitted_at(parts: Sequence[TopicPart]) -> datetime | None:
    """When the last part was done (None until every part is)."""
    if not parts or any(part.completed_at is None for part in parts):
        return None
    return max(part.completed_at for part in parts if part.completed_at is not None)


@dataclass(frozen=True)
class RosterRow:
    """One learner from a roster CSV."""

    line: int
    username: str
    email: str | None
    student_id: str | None
    name: str | None


_USERNAME = re.compile(r"[A-Za-z0-9_.-]{3,40}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
ROSTER_COLUMNS = ("email", "username", "student id", "name")


def roster_rows(rows: list[dict[str, str]]) -> tuple[list[RosterRow], list[str]]:
    """Check every row of a roster (header row is line 1); return the rows and every error."""
    good: list[RosterRow] = []
    errors: list[str] = []
    seen: set[str] = set()
    for line, row in enumerate(rows, start=2):
        cells = {key.strip().lower(): (value or "").strip() for key, value in row.items() if key}
        email = cells.get("email") or None
        username = cells.get("username") or (email.split("@")[0] if email else "")
        if email is not None and not _EMAIL.fullmatch(email):
            errors.append(f"line {line}: {email!r} is not an email address")
            continue
        if not _USERNAME.fullmatch(username):
            errors.append(
                f"line {line}: username {username!r} must be 3 to 40 letters, digits, '_', '.' "
                "or '-' (or give an email)"
            )
            continue
        if username.lower() in seen:
            errors.append(f"line {line}: username {username!r} appears twice")
            continue
        seen.add(username.lower())
        good.append(
            RosterRow(
                line, username, email, cells.get("student id") or None, cells.get("name") or None
            )
        )
    return good, errors


class DueState(StrEnum):
    """How a due date stands for a learner."""

    DUE = "due"
    OVERDUE = "overdue"  # past due, still open (late work counts under the late rule)
    CLOSED = "closed"


def due_state(window: Window, now: datetime) -> DueState:
    """Due, overdue (past due, before close) or closed."""
    if now >= window.close_at:
        return DueState.CLOSED
    return DueState.OVERDUE if now > window.due_at else DueState.DUE


def due_phrase(due_at: datetime, now: datetime, zone: tzinfo) -> str:
    """When an assignment is due, in the learner's zone: "due Friday 17:00" within a week,
    "due today"/"due tomorrow" close by, the date further off, "was due ..." once past."""
    due, today = due_at.astimezone(zone), now.astimezone(zone)
    days = (due.date() - today.date()).days
    clock = f"{due:%H:%M}"
    if due_at < now:
        return f"was due {due:%a %d %b} {clock}"
    if days == 0:
        return f"due today {clock}"
    if days == 1:
        return f"due tomorrow {clock}"
    if days < 7:
        return f"due {due:%A} {clock}"
    return f"due {due:%a %d %b %Y} {clock}"


def due_text(window: Window, now: datetime, zone: tzinfo) -> str:
    """The due date as a learner's page shows it: "due Friday 17:00", or past it "overdue,
    was due ..." until the close date and "closed, was due ..." after."""
    phrase = due_phrase(window.due_at, now, zone)
    state = due_state(window, now)
    return phrase if state is DueState.DUE else f"{state.value}, {phrase}"

"""Pure rules for classes: join codes, assignment windows, the late rule, roster rows."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, tzinfo

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

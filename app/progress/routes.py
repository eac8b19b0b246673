"""My progress: per topic, what is done in each step; cards and mistakes due; a calendar of
activity; badges and the history of timed attempts."""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from app import reads
from app.attempts import service as attempts
from app.attempts.models import SetAttempt
from app.classes import reports as classes
from app.deps import Page, page_route
from app.progress import rules
from app.progress import service as progress
from app.progress import zone as zones

router = APIRouter()


@page_route(router, "/me/progress")
async def progress_page(page: Page) -> HTMLResponse:
    """Every topic's steps with what is done in each, what is due, the activity calendar, the
    badges earned and every timed attempt, newest first."""
    user = page.signed_in()
    assert user.id is not None
    zone = zones.of(page.request)  # the calendar's days are the learner's, not UTC's
    today = page.now.astimezone(zone).date()
    standing, history, days = await reads.read(
        page.engine, _everything, user.id, page.now, today, zone
    )
    dues = await reads.read(page.engine, classes.dues, user.id, page.now, zone)
    path = progress.path_of(page.catalog, standing)
    done, total = rules.completion(path)
    badges = []
    seen: set[str] = set()
    for attempt in sorted(history, key=lambda a: a.finished_at or a.started_at):
        if attempt.badge_earned and attempt.set_id not in seen:
            seen.add(attempt.set_id)
            loaded = page.catalog.get(attempt.set_id, attempt.content_version)
            badges.append(
                {"attempt": attempt, "badge": loaded.challenge_set.badge if loaded else None}
            )
    rows = [(topic, {step.kind.value: step for step in topic.steps}) for topic in path]
    response = page.render(
        "progress.html",
        {
            "rows": rows,
            "done": done,
            "total": total,
            "percent": rules.percent(done, total),
            "cards_due": sum(r.cards_due for r in standing.topics.values()),
            "mistakes_due": sum(r.mistakes_due for r in standing.topics.values()),
            "weeks": _weeks(today, days),
            "active_days": len(days),
            "zone": zones.name(zone),
            "next_step": rules.next_step(path, progress.open_attempt(page.catalog, standing)),
            "history": history,
            "badges": badges,
            "topic_dues": classes.by_topic(dues, page.catalog),
        },
    )
    assert isinstance(response, HTMLResponse)
    return response


def _everything(
    reader: reads.Reader, user_id: int, now: datetime, today: date, zone: tzinfo
) -> tuple[progress.Standing, list[SetAttempt], dict[date, int]]:
    """The standing, the timed attempts and the activity calendar, on one reader."""
    standing = progress.read_standing(reader, user_id, now)
    history = attempts.history(reader, user_id)
    return standing, history, progress.activity(reader, user_id, today, zone)


def _weeks(today: date, days: dict[date, int]) -> list[list[tuple[date, int] | None]]:
    """The calendar as weeks (rows) of seven days (Monday first); days after today are None."""
    first = progress.calendar_start(today)
    weeks = []
    for week in range(progress.CALENDAR_WEEKS):
        row: list[tuple[date, int] | None] = []
        for weekday in range(7):
            day = first + timedelta(weeks=week, days=weekday)
            row.append(None if day > today else (day, days.get(day, 0)))
        weeks.append(row)
    return weeks

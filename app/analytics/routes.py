"""Admin dashboards: overview, item analysis per set, learners' progress, CSV exports."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from itertools import groupby

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlmodel import col

from app.analytics import rules
from app.analytics import service as analytics
from app.attempts import rules as attempt_rules
from app.attempts.models import SetAttempt
from app.deps import AdminUser, CatalogDep, RowId, SessionDep, SlugId

router = APIRouter(prefix="/admin")

FINISHED_ONLY = "Statistics count finished attempts only; unfinished attempts appear in the counts."
MISCONCEPTION_WORDS = (
    "A misconception is picked first when a learner's first answer to an item (the try the "
    "score rewards) chooses a distractor that stands for it. Share: those first picks out of "
    "every first pick on the items exposing it (finished attempts, every content version)."
)
LESSON_CHECK_WORDS = (
    "A lesson check question counts the same way: each learner's first answer to it, whichever "
    "try asked it first (judged against the lesson as served now)."
)


def _one_decimal(value: float | None) -> float | None:
    # Charts and tables show the same rounded numbers, so a reader can check one against the other.
    return None if value is None else round(value, 1)


def _chart(
    kind: str, labels: Sequence[str], series: dict[str, Sequence[float | None]]
) -> dict[str, object]:
    """Describe a Chart.js chart as JSON-ready data (drawn by static/js/charts.js)."""
    return {
        "type": kind,
        "labels": list(labels),
        "datasets": [{"label": label, "data": list(data)} for label, data in series.items()],
    }


def _page(request: Request, template: str, context: dict[str, object]) -> HTMLResponse:
    response: HTMLResponse = request.app.state.templates.TemplateResponse(
        request,
        template,
        {
            "finished_only": FINISHED_ONLY,
            "score_words": attempt_rules.SCORE_IN_WORDS,
            "misconception_words": MISCONCEPTION_WORDS,
            "lesson_check_words": LESSON_CHECK_WORDS,
            **context,
        },
    )
    return response


@router.get("", response_class=HTMLResponse)
def overview(request: Request, _admin: AdminUser, session: SessionDep, catalog: CatalogDep):
    """Show learners, attempts, completions and badges, per day and per set."""
    days = analytics.daily_activity(session)
    sets = analytics.set_rows(session, catalog)
    totals = analytics.overview_totals(session)
    daily_chart = _chart(
        "bar",
        [day.day.isoformat() for day in days],
        {
            "Attempts started": [day.started for day in days],
            "Attempts completed": [day.completed for day in days],
            "Badges awarded": [day.badges for day in days],
        },
    )
    sets_chart = _chart(
        "bar",
        [row.title for row in sets],
        {
            "Mean score (%)": [_one_decimal(row.summary.mean_score) for row in sets],
            "Badge rate (%)": [_one_decimal(row.summary.badge_rate) for row in sets],
        },
    )
    return _page(
        request,
        "admin/overview.html",
        {
            "totals": totals,
            "days": days,
            "sets": sets,
            "daily_chart": daily_chart,
            "sets_chart": sets_chart,
        },
    )


@router.get("/sets/{set_id}", response_class=HTMLResponse)
def set_report(
    request: Request, set_id: SlugId, _admin: AdminUser, session: SessionDep, catalog: CatalogDep
):
    """Show one set's summary and, per item, facility, discrimination, time, hints and options."""
    title = analytics.set_title(session, catalog, set_id)
    items = analytics.item_rows(session, catalog, set_id)
    totals = analytics.attempt_totals(session, col(SetAttempt.set_id), set_id=set_id)
    summary = rules.set_summary(totals.get(set_id, rules.NO_ATTEMPTS))
    # Rows come grouped by content version (served first); a chart names the version once
    # there is more than one.
    item_groups = [(label, list(rows)) for label, rows in groupby(items, lambda r: r.version_label)]
    labels = [
        row.statistics.item_id + (f" ({row.version_label})" if len(item_groups) > 1 else "")
        for row in items
    ]
    index_chart = _chart(
        "bar",
        labels,
        {
            "Facility index": [_one_decimal(row.statistics.facility) for row in items],
            "Discrimination index": [_one_decimal(row.statistics.discrimination) for row in items],
        },
    )
    time_chart = _chart(
        "bar",
        labels,
        {"Mean time to answer (s)": [_one_decimal(row.statistics.mean_seconds) for row in items]},
    )
    return _page(
        request,
        "admin/set.html",
        {
            "set_id": set_id,
            "title": title,
            "summary": summary,
            "items": items,
            "item_groups": item_groups,
            "index_chart": index_chart,
            "time_chart": time_chart,
            "misconceptions": analytics.misconception_rows(session, catalog, set_id),
        },
    )


@router.get("/misconceptions", response_class=HTMLResponse)
def misconceptions(request: Request, _admin: AdminUser, session: SessionDep, catalog: CatalogDep):
    """Show every misconception the sets name: how often learners picked it first, and where."""
    rows = analytics.misconception_rows(session, catalog)
    return _page(request, "admin/misconceptions.html", {"rows": rows})


@router.get("/learners", response_class=HTMLResponse)
def learners(request: Request, _admin: AdminUser, session: SessionDep):
    """List every user with their attempts, completions, badges and mean score."""
    return _page(request, "admin/learners.html", {"rows": analytics.learner_rows(session)})


@router.get("/learners/{user_id}", response_class=HTMLResponse)
def learner(
    request: Request, user_id: RowId, _admin: AdminUser, session: SessionDep, catalog: CatalogDep
):
    """Show one learner's progress: per set, then every attempt."""
    [(person, summary)] = analytics.learner_rows(session, user_id)
    per_set = [
        (row.set_id, row.title, row.summary)
        for row in analytics.set_rows(session, catalog, user_id=user_id)
    ]
    return _page(
        request,
        "admin/learner.html",
        {
            "person": person,
            "summary": summary,
            "per_set": per_set,
            "attempts": list(reversed(analytics.set_attempts(session, user_id=user_id))),
            "scores": analytics.attempt_scores(session, user_id=user_id),
        },
    )


def spreadsheet_text(value: str | None) -> str:
    """Return text for a CSV cell that no spreadsheet program will run as a formula."""
    # A cell starting with = + - @ is run as a formula by spreadsheet programs (CSV injection).
    text = value or ""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _csv(filename: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Response:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")  # RFC 4180 line endings
    writer.writerow(header)
    writer.writerows(rows)
    return Response(
        buffer.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


ATTEMPT_COLUMNS = (
    "attempt_id",
    "user_id",
    "username",
    "set_id",
    "set_title",
    "started_at",
    "finished_at",
    "items",
    "correct",
    "score_percent",
    "badge_earned",
    "first_try",
)


def learner_label(user_id: int, username: str | None) -> str:
    """A user as staff read them: the username, or a stable label for a guest (never empty)."""
    return username or f"guest-{user_id}"


@router.get("/export/attempts.csv")
def export_attempts(_admin: AdminUser, session: SessionDep) -> Response:
    """Download every set attempt as CSV, oldest first; a finished attempt's score is the one
    its results page shows (app.attempts.rules.score)."""
    names = {user.id: user.username for user in analytics.users(session)}
    scores = analytics.attempt_scores(session)
    rows = []
    for attempt in analytics.set_attempts(session):
        assert attempt.id is not None
        score = scores.get(attempt.id) if attempt.finished_at is not None else None
        rows.append(
            (
                attempt.id,
                attempt.user_id,
                spreadsheet_text(learner_label(attempt.user_id, names.get(attempt.user_id))),
                spreadsheet_text(attempt.set_id),
                spreadsheet_text(attempt.set_title),
                attempt.started_at.isoformat(),
                attempt.finished_at.isoformat() if attempt.finished_at else "",
                len(attempt.item_id_list),
                "" if score is None else score.correct,
                "" if score is None else score.percent,
                "true" if attempt.badge_earned else "false",
                "" if score is None else score.first_try,
            )
        )
    return _csv("attempts.csv", ATTEMPT_COLUMNS, rows)


ITEM_COLUMNS = (
    "set_id",
    "content_version",
    "item_id",
    "item_title",
    "kind",
    "finished_attempts",
    "facility_index",
    "first_try_facility",
    "discrimination_index",
    "mean_seconds",
    "timeouts",
    "hints_shown",
    "option_counts",
)


@router.get("/export/items.csv")
def export_items(_admin: AdminUser, session: SessionDep, catalog: CatalogDep) -> Response:
    """Download every item's statistics (finished attempts only) per content version as CSV;
    in option_counts a * marks an answer that version's key accepts."""
    rows = []
    totals = analytics.item_totals(session)  # every set at once: two queries, not two per set
    answers = analytics.answer_counts(session)
    for set_row in analytics.set_rows(session, catalog):
        for item in analytics.item_rows(session, catalog, set_row.set_id, totals, answers):
            stats = item.statistics
            counts = ";".join(
                f"{option}{'*' if option in item.key else ''}={count}"
                for option, count in stats.option_counts.items()
            )
            rows.append(
                (
                    spreadsheet_text(set_row.set_id),
                    item.version or "",
                    spreadsheet_text(stats.item_id),
                    spreadsheet_text(item.title),
                    item.kind,
                    stats.attempts,
                    _number(stats.facility),
                    _number(stats.first_try_facility),
                    _number(stats.discrimination),
                    _number(stats.mean_seconds),
                    stats.timeouts,
                    stats.hints,
                    spreadsheet_text(counts),
                )
            )
    return _csv("items.csv", ITEM_COLUMNS, rows)

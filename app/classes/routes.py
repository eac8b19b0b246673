"""Class pages: instructors create classes, upload rosters, set assignments and extensions and
download the gradebook; learners join with a code and see what is due."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import Field

from app.accounts.models import User
from app.analytics import service as analytics
from app.challenges.catalog import Catalog
from app.classes import reports, rules, service
from app.classes.models import Assignment, ClassGroup, Klass
from app.deps import (
    MAX_ROW_ID,
    CatalogDep,
    CsrfDep,
    CurrentUser,
    NowDep,
    RowId,
    SessionDep,
    StaffUser,
)
from app.errors import BadRequest, NotFound
from app.progress import zone as zones

router = APIRouter()
MAX_ROSTER_BYTES = 1_000_000  # 200 learners' rows are ~10 kB
Text = Annotated[str, Form(max_length=200)]
OptionalText = Annotated[str | None, Form(max_length=200)]


def _moment(raw: str | None, request: Request, what: str) -> datetime | None:
    """A date and time typed in the person's own zone (datetime-local), stored UTC."""
    if not raw:
        return None
    try:
        typed = datetime.fromisoformat(raw)
    except ValueError as error:
        raise BadRequest(
            f"The {what} date {raw!r} is not a date and time (YYYY-MM-DDTHH:MM)."
        ) from error
    if typed.tzinfo is None:
        typed = typed.replace(tzinfo=zones.of(request))
    return typed


def _required(raw: str | None, request: Request, what: str) -> datetime:
    moment = _moment(raw, request, what)
    if moment is None:
        raise BadRequest(f"The assignment needs a {what} date.")
    return moment


def _page(
    request: Request,
    staff: User,
    session: SessionDep,
    klass: Klass,
    catalog: Catalog,
    roster: service.RosterResult | None = None,
):
    assert klass.id is not None
    given = service.assignments(session, klass.id)
    return request.app.state.templates.TemplateResponse(
        request,
        "classes/class.html",
        {
            "klass": klass,
            "members": service.members(session, klass.id),
            "assignments": given,
            "sets": sorted(catalog.sets.values(), key=lambda loaded: loaded.challenge_set.title),
            "topics": catalog.topics(),
            "groups": service.groups(session, klass.id),
            "roster": roster,
        },
        status_code=400 if roster is not None and roster.errors else 200,
    )


@router.get("/staff/classes", response_class=HTMLResponse)
def classes_page(request: Request, staff: StaffUser, session: SessionDep):
    """The instructor's classes and a form to create one."""
    return request.app.state.templates.TemplateResponse(
        request, "classes/list.html", {"classes": service.classes_of(session, staff)}
    )


@router.post("/staff/classes", dependencies=[CsrfDep])
def create_class(staff: StaffUser, session: SessionDep, now: NowDep, title: Text):
    """Create a class; its page shows the code learners join with."""
    klass = service.create_class(session, title, staff, now)
    return RedirectResponse(f"/staff/classes/{klass.id}", status_code=303)


@router.get("/staff/classes/{class_id}", response_class=HTMLResponse)
def class_page(
    request: Request, class_id: RowId, staff: StaffUser, session: SessionDep, catalog: CatalogDep
):
    """A class: its join code, roster, assignments with their extensions, gradebook links."""
    klass = service.class_for_staff(session, class_id, staff)
    return _page(request, staff, session, klass, catalog)


@router.get("/staff/classes/{class_id}/misconceptions", response_class=HTMLResponse)
def class_misconceptions(
    request: Request, class_id: RowId, staff: StaffUser, session: SessionDep, catalog: CatalogDep
):
    """The misconceptions this class's first picks showed, in sets and lesson checks."""
    klass = service.class_for_staff(session, class_id, staff)
    rows = analytics.misconception_rows(session, catalog, class_id=klass.id)
    return request.app.state.templates.TemplateResponse(
        request, "classes/misconceptions.html", {"klass": klass, "rows": rows}
    )


@router.post("/staff/classes/{class_id}/roster", dependencies=[CsrfDep])
def upload_roster(
    request: Request,
    class_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    catalog: CatalogDep,
    now: NowDep,
    roster: Annotated[UploadFile, File()],
):
    """Add a roster CSV's learners (a bad row: every error listed, nobody added)."""
    data = roster.file.read(MAX_ROSTER_BYTES + 1)  # a sync route: its writes run on a worker thread
    if len(data) > MAX_ROSTER_BYTES:
        raise BadRequest("The roster is over 1 MB; split it.")
    try:
        text = data.decode("utf-8-sig")  # Excel writes a byte-order mark
    except UnicodeDecodeError as error:
        raise BadRequest("The roster must be a UTF-8 CSV file.") from error
    klass = service.class_for_staff(session, class_id, staff)
    result = service.upload_roster(session, klass, text, now)
    return _page(
        request,
        staff,
        session,
        klass,
        catalog,
        roster=result,
    )


@router.post("/staff/classes/{class_id}/assignments", dependencies=[CsrfDep])
def add_assignment(
    request: Request,
    class_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    catalog: CatalogDep,
    set_id: Text,
    open_at: Text,
    due_at: Text,
    close_at: OptionalText = None,
    attempt_limit: Annotated[int | None, Form(ge=1, le=100)] = None,
    late_penalty: Annotated[float, Form(ge=0, le=100)] = 0.0,
):
    """Give a set (or "topic:<id>", a whole topic) to the class: opens, due, closes (default:
    due), attempt limit, late rule."""
    klass = service.class_for_staff(session, class_id, staff)
    topic_id = set_id.removeprefix("topic:") if set_id.startswith("topic:") else None
    if topic_id is not None:
        topic = catalog.topic(topic_id)
        if topic is None:
            raise BadRequest(f"No topic {topic_id!r}.")
        if attempt_limit is not None:  # its dates refuse no start either: nothing to count
            raise BadRequest(
                "A topic assignment has no attempt limit: assign one of its sets for that."
            )
        title, set_id = f"{topic.title} (topic)", ""
    else:
        loaded = catalog.get(set_id)
        if loaded is None:
            raise BadRequest(f"No challenge set {set_id!r}.")
        title = loaded.challenge_set.title
    due = _required(due_at, request, "due")
    window = rules.Window(
        _required(open_at, request, "open"), due, _moment(close_at, request, "close") or due
    )
    service.add_assignment(
        session, klass, set_id, title, window, attempt_limit, late_penalty, topic_id
    )
    return RedirectResponse(f"/staff/classes/{klass.id}", status_code=303)


@router.post(
    "/staff/classes/{class_id}/assignments/{assignment_id}/extensions", dependencies=[CsrfDep]
)
def grant_extension(
    request: Request,
    class_id: RowId,
    assignment_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    user_id: Annotated[int, Form(ge=1, le=MAX_ROW_ID)],
    time_multiplier: Annotated[str, Form(pattern=r"^(untimed|\d+(\.\d+)?)$")] = "1",
    due_at: OptionalText = None,
    close_at: OptionalText = None,
):
    """Give one learner extra time and/or later dates for one assignment."""
    klass = service.class_for_staff(session, class_id, staff)
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.class_id != klass.id:
        raise NotFound("No such assignment in this class.")
    multiplier = None if time_multiplier == "untimed" else float(time_multiplier)
    service.grant_extension(
        session,
        assignment,
        user_id,
        multiplier,
        _moment(due_at, request, "extended due"),
        _moment(close_at, request, "extended close"),
    )
    return RedirectResponse(f"/staff/classes/{klass.id}", status_code=303)


def _assignment(session: SessionDep, klass: Klass, assignment_id: int) -> Assignment:
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.class_id != klass.id:
        raise NotFound("No such assignment in this class.")
    return assignment


def _group(session: SessionDep, klass: Klass, group_id: int) -> ClassGroup:
    group = session.get(ClassGroup, group_id)
    if group is None or group.class_id != klass.id:
        raise NotFound("No such group in this class.")
    return group


def _multiplier(raw: str) -> float | None:
    return None if raw == "untimed" else float(raw)


Multiplier = Annotated[str, Form(pattern=r"^(untimed|\d+(\.\d+)?)$")]
UserIds = Annotated[list[Annotated[int, Field(ge=1, le=MAX_ROW_ID)]], Form(max_length=1000)]


@router.post("/staff/classes/{class_id}/groups", dependencies=[CsrfDep])
def create_group(
    class_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    name: Annotated[str, Form(max_length=100)],
    user_id: UserIds | None = None,
):
    """Make a group of the class's learners (e.g. "accessibility ×1.5", "lab section B")."""
    klass = service.class_for_staff(session, class_id, staff)
    service.create_group(session, klass, name, user_id or [])
    return RedirectResponse(f"/staff/classes/{klass.id}#groups", status_code=303)


@router.post("/staff/classes/{class_id}/groups/{group_id}/members", dependencies=[CsrfDep])
def add_to_group(
    class_id: RowId,
    group_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    user_id: Annotated[int, Form(ge=1, le=MAX_ROW_ID)],
):
    """Put one more of the class's learners in a group."""
    klass = service.class_for_staff(session, class_id, staff)
    service.add_to_group(session, _group(session, klass, group_id), user_id)
    return RedirectResponse(f"/staff/classes/{klass.id}#groups", status_code=303)


@router.post(
    "/staff/classes/{class_id}/assignments/{assignment_id}/group-extensions",
    dependencies=[CsrfDep],
)
def grant_group_extension(
    request: Request,
    class_id: RowId,
    assignment_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    group_id: Annotated[int, Form(ge=1, le=MAX_ROW_ID)],
    time_multiplier: Multiplier = "1",
    due_at: OptionalText = None,
    close_at: OptionalText = None,
):
    """Give a group extra time and/or later dates for one assignment (a learner's own
    extension wins over it)."""
    klass = service.class_for_staff(session, class_id, staff)
    assignment = _assignment(session, klass, assignment_id)
    service.grant_group_extension(
        session,
        assignment,
        _group(session, klass, group_id),
        _multiplier(time_multiplier),
        _moment(due_at, request, "extended due"),
        _moment(close_at, request, "extended close"),
    )
    return RedirectResponse(
        f"/staff/classes/{klass.id}/assignments/{assignment.id}", status_code=303
    )


@router.get("/staff/classes/{class_id}/assignments/{assignment_id}", response_class=HTMLResponse)
def assignment_page(
    request: Request,
    class_id: RowId,
    assignment_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    catalog: CatalogDep,
    now: NowDep,
):
    """One assignment: each learner's status, attempts, score, late factor and extension."""
    klass = service.class_for_staff(session, class_id, staff)
    assignment = _assignment(session, klass, assignment_id)
    zone = zones.of(request)
    rows = reports.assignment_rows(session, catalog, assignment, now)
    return request.app.state.templates.TemplateResponse(
        request,
        "classes/assignment.html",
        {
            "klass": klass,
            "assignment": assignment,
            "rows": rows,
            "extensions": [reports.allowance_text(row.allowance, zone) for row in rows],
            "rule": reports.score_rule(assignment),
            "groups": service.groups(session, klass.id or 0),
        },
    )


@router.get(
    "/staff/classes/{class_id}/assignments/{assignment_id}/learners/{user_id}",
    response_class=HTMLResponse,
)
def learner_results(
    request: Request,
    class_id: RowId,
    assignment_id: RowId,
    user_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    catalog: CatalogDep,
    now: NowDep,
):
    """One learner's results for one assignment: each counted attempt's score (their results
    page's), its late factor, and each question's outcome and tries."""
    klass = service.class_for_staff(session, class_id, staff)
    assignment = _assignment(session, klass, assignment_id)
    member = service.membership(session, klass.id or 0, user_id)
    learner = session.get(User, user_id)
    if member is None or member.role != "learner" or learner is None:
        raise NotFound("No such learner in this class.")
    return request.app.state.templates.TemplateResponse(
        request,
        "classes/learner.html",
        {
            "klass": klass,
            "assignment": assignment,
            "row": reports.learner_row(session, catalog, assignment, member, learner, now),
            "reviews": reports.attempt_reviews(session, catalog, assignment, user_id),
            "rule": reports.score_rule(assignment),
        },
    )


@router.get("/staff/classes/{class_id}/assignments/{assignment_id}/view.csv")
def assignment_csv(
    request: Request,
    class_id: RowId,
    assignment_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    catalog: CatalogDep,
    now: NowDep,
):
    """The per-assignment view as CSV (the same rows and numbers)."""
    klass = service.class_for_staff(session, class_id, staff)
    assignment = _assignment(session, klass, assignment_id)
    rows = reports.assignment_rows(session, catalog, assignment, now)
    text = reports.assignment_csv(rows, assignment, zones.of(request))
    name = f"ranklab-class-{klass.id}-assignment-{assignment.id}.csv"
    return Response(
        text,
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/staff/classes/{class_id}/gradebook.csv")
def gradebook(
    class_id: RowId,
    staff: StaffUser,
    session: SessionDep,
    catalog: CatalogDep,
    flavour: str = "canvas",
):
    """The class's scores as a CSV for Canvas's (default) or Moodle's grade import."""
    klass = service.class_for_staff(session, class_id, staff)
    text = service.gradebook_csv(session, klass, flavour, catalog)
    name = f"ranklab-class-{klass.id}-{flavour}.csv"
    return Response(
        text,
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/join", response_class=HTMLResponse)
def join_page(request: Request, user: CurrentUser, code: str = ""):
    """The form a learner types a class code into (a link may fill it in)."""
    return request.app.state.templates.TemplateResponse(
        request, "classes/join.html", {"code": code[:16], "error": None}
    )


@router.post("/join", dependencies=[CsrfDep])
def join(
    user: CurrentUser, session: SessionDep, now: NowDep, code: Annotated[str, Form(max_length=40)]
):
    """Join a class with its code (a guest too: the membership stays when they sign up)."""
    klass = service.class_by_code(session, code)
    service.join(session, user, klass, "code", now)
    return RedirectResponse("/me/classes", status_code=303)


@router.get("/me/classes", response_class=HTMLResponse)
def my_classes(
    request: Request, user: CurrentUser, session: SessionDep, catalog: CatalogDep, now: NowDep
):
    """The learner's classes and assignments: when each is due (in their zone) and its score."""
    zone = zones.of(request)
    rows = []
    for klass in service.classes_of(session, user):
        assert klass.id is not None
        for assignment in service.assignments(session, klass.id):
            assert user.id is not None
            window = service.window_for(
                assignment, service.allowance_for(session, assignment, user.id)
            )
            rows.append(
                {
                    "klass": klass,
                    "assignment": assignment,
                    "due": rules.due_text(window, now, zone),
                    "state": rules.due_state(window, now).value,
                    "score": service.assignment_score(session, assignment, user, catalog),
                    "rule": reports.score_rule(assignment),
                }
            )
    return request.app.state.templates.TemplateResponse(
        request, "classes/mine.html", {"rows": rows, "classes": service.classes_of(session, user)}
    )

"""The hot pages ask the database a fixed number of questions: as many with 30 attempts behind
them as with 3 (no query per attempt, per question or per answer), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlmodel import Session

from app import reads
from app.accounts import service as accounts
from app.accounts.models import Role, User
from app.attempts import service as attempts
from app.challenges.loader import load_path
from app.challenges.schema import ChallengeSet, ChoiceBase, NumericItem
from app.db import make_engine
from app.deps import CSRF_COOKIE, SESSION_COOKIE
from tests.conftest import TEST_CHALLENGES

GRACE_S = 3.0
# Each page with the most statements it may send, BEGIN included (SQLite sends one, PostgreSQL
# begins implicitly): the user, then one query for the page's rows (two for a result's). The
# hot pages read through app.reads, with no transaction: the user and their rows, nothing else.
# Home's course path reads each mode's table once, grouped: the sets' standings, the untimed
# answers, the quizzes, the review cards, the lab steps and the lessons (never a query per
# topic). Home, a set and progress add one: the assignments of the learner's classes, for their
# due dates (two more, the extensions, only for a learner in a class: app.classes.reports.dues).
PAGES = {
    "/": 8,
    "/sets/test-basics": 3,
    "/attempts/{current}/q/1": 2,
    # The results' 4, each question's first pick (its misconceptions), the questions first shown
    # elsewhere (not counted toward the badge), and the path's six for its one next step (as
    # home reads them).
    "/attempts/{finished}/results": 12,
    "/me/progress": 10,  # the path's six, the attempts, the activity calendar, the due dates
    # Admin pages: each a GROUP BY, plus one per score total: every finished attempt's questions
    # by (status, tries), scored by the results page's own rule (app.analytics.service).
    "/admin": 10,  # the overview's totals, days, sets
    # and the items' credits and their content versions, and the first picks (misconceptions)
    "/admin/sets/test-basics": 9,
    "/admin/learners": 6,
    "/admin/learners/{user}": 10,  # and each attempt's score, as its results page shows it
}


def basics() -> ChallengeSet:
    return next(
        loaded.challenge_set
        for loaded in load_path(TEST_CHALLENGES).sets
        if loaded.challenge_set.id == "test-basics"
    )


def finish(session: Session, user_id: int, challenge_set: ChallengeSet, clock) -> int:
    """Take the set to the end through the services, one answer per question."""
    attempt = attempts.start_or_resume(session, user_id, challenge_set, clock.now)
    assert attempt.id is not None
    for position, item in enumerate(challenge_set.items):
        row = attempts.item_at(session, attempt.id, position)
        if isinstance(item, ChoiceBase):
            answer = sorted(item.answer_ids)
        else:
            assert isinstance(item, NumericItem)
            answer = [str(item.answer)]
        attempts.submit(session, row, item, answer, GRACE_S, clock.now)
        clock.advance(5)
        attempts.advance(session, attempt, challenge_set, GRACE_S, clock.now)
    return attempt.id


def take(database_url: str, clock, user_id: int, finished: int) -> dict[str, int]:
    """Finish the set `finished` more times (the open attempt first), then open a new attempt."""
    challenge_set = basics()
    engine = make_engine(database_url)
    ids = {"user": user_id}
    with Session(engine, expire_on_commit=False) as session:
        for _ in range(finished):
            ids["finished"] = finish(session, user_id, challenge_set, clock)
            clock.advance(60)
        current = attempts.start_or_resume(session, user_id, challenge_set, clock.now)
        assert current.id is not None
        ids["current"] = current.id
    engine.dispose()
    return ids


def admin_with_session(database_url: str, clock) -> tuple[int, str]:
    """An admin (who also takes the set, as a learner would) and a browser session of theirs."""
    engine = make_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        user = User(username="ada", is_guest=False, role=Role.ADMIN, created_at=clock.now)
        session.add(user)
        session.commit()
        assert user.id is not None
        token = accounts.open_session(session, user, clock.now, days=1)
    engine.dispose()
    return user.id, token


@contextmanager
def counting(engine: Any) -> Iterator[list[str]]:
    """Collect every statement sent to the database while the block runs: through SQLAlchemy,
    and through app.reads (which runs on the driver, past SQLAlchemy's events)."""
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    def counted(read: Callable[..., Any]) -> Callable[..., Any]:
        def run(reader: reads.Reader, query: reads.Query, **values: Any) -> Any:
            if reader.on_driver:  # a session's reader is seen by the event above
                statements.append(str(query.statement))
            return read(reader, query, **values)

        return run

    event.listen(engine, "before_cursor_execute", count)
    first, rows = reads.Reader.first, reads.Reader.rows
    reads.Reader.first, reads.Reader.rows = counted(first), counted(rows)  # type: ignore[method-assign]
    try:
        yield statements
    finally:
        reads.Reader.first, reads.Reader.rows = first, rows  # type: ignore[method-assign]
        event.remove(engine, "before_cursor_execute", count)


def statements_per_page(client: TestClient, ids: dict[str, int]) -> dict[str, int]:
    counts = {}
    for page in PAGES:
        url = page.format(**ids)
        with counting(client.app.state.engine) as statements:  # type: ignore[attr-defined]
            response = client.get(url)
        assert response.status_code == 200, (url, response.text[:300])
        counts[page] = len(statements)
    return counts


def test_each_hot_page_asks_as_many_queries_after_30_attempts_as_after_3(
    app_factory, database_url, clock
):
    user_id, token = admin_with_session(database_url, clock)
    # Each process also looks for versions another worker published, one small query at most
    # every RANKLAB_CONTENT_CHECK_S (2 s): a cost per process and interval, not per page, which
    # would land on whichever page came after the interval. Kept out of the pages' counts.
    with TestClient(app_factory(database_url, content_check_s=3600)) as client:
        client.cookies.set(SESSION_COOKIE, token)
        client.cookies.set(CSRF_COOKIE, "seed")
        few = statements_per_page(client, take(database_url, clock, user_id, 3))
        many = statements_per_page(client, take(database_url, clock, user_id, 27))
    assert {p: n for p, n in few.items() if n > PAGES[p]} == {}, few
    assert all(count >= 2 for count in few.values()), few  # the user, then the page's rows
    assert many == few, f"after 30 attempts {many}; after 3 {few}"

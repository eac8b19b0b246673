"""Next (app.attempts.service.advance), on SQLite and PostgreSQL: once the question is closed it
moves on in one statement on PostgreSQL (the move and the next question's opening, a
data-modifying CTE), two on SQLite, and touches nothing else of the attempt; where the question
is not closed it looks closer (a time-out is recorded, an open question refuses), and two tabs
pressing Next at once move one step."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import inspect
from sqlmodel import Session, col, select

from app.attempts.models import ItemAttempt, SetAttempt
from app.attempts.rules import ItemStatus
from app.db import make_engine
from tests.attempts.test_submit import _statements

SECOND_LIMIT_S = 120  # test-basics' second question


def _stored(database_url: str) -> tuple[dict[str, Any], list[ItemAttempt]]:
    """The attempt's columns, and its questions in order."""
    engine = make_engine(database_url)
    with Session(engine) as session:
        attempt = session.exec(select(SetAttempt)).one()
        columns = {c.key: getattr(attempt, c.key) for c in inspect(SetAttempt).column_attrs}
        items = list(session.exec(select(ItemAttempt).order_by(col(ItemAttempt.position))))
    engine.dispose()
    return columns, items


def _writes(statements: list[str]) -> list[str]:
    return [s for s in statements if s.startswith(("UPDATE", "INSERT", "WITH", "DELETE"))]


def test_next_moves_on_and_opens_the_next_question_changing_nothing_else(
    learner, clock, database_url
):
    attempt = learner.start("test-basics")
    assert learner.answer(attempt, 1, "B").status_code == 303
    before, _ = _stored(database_url)
    clock.advance(7)
    with _statements(learner.client.app.state.engine) as sent:
        moved = learner.next(attempt)
    assert moved.status_code == 303 and moved.headers["location"] == f"{attempt}/q/2"
    after, items = _stored(database_url)
    assert after == {**before, "current_position": 1}  # its own start time untouched
    assert items[0].status is ItemStatus.CORRECT
    assert items[1].status is ItemStatus.OPEN and items[1].time_limit_s == SECOND_LIMIT_S
    assert items[1].started_at is not None and items[1].started_at >= clock.now
    writes = _writes(sent)
    # Then the question's first sight is recorded (app.attempts.sightings): one INSERT more.
    assert writes[-1].startswith("INSERT INTO item_sighting")
    if database_url.startswith("postgresql"):
        assert len(writes) == 2 and writes[0].startswith("WITH moved AS")
    else:
        assert len(writes) == 3
    state = learner.get(f"/api{attempt}/q/2").json()
    assert state["seconds_left"] == pytest.approx(SECOND_LIMIT_S)


def test_next_on_an_open_question_is_refused_and_moves_nothing(learner, database_url):
    attempt = learner.start("test-basics")
    refused = learner.next(attempt)
    assert refused.status_code == 409 and "before moving on" in refused.text
    stored, items = _stored(database_url)
    assert stored["current_position"] == 0
    assert [item.status for item in items] == [ItemStatus.OPEN, ItemStatus.PENDING]


def test_next_after_the_time_ran_out_records_the_time_out_and_moves_on(
    learner, clock, database_url
):
    attempt = learner.start("test-basics")
    clock.advance(60 + 3 + 1)  # limit 60 s, grace 3 s: out of time, not yet recorded
    assert learner.next(attempt).status_code == 303
    stored, items = _stored(database_url)
    assert stored["current_position"] == 1
    assert items[0].status is ItemStatus.TIMED_OUT and items[0].closed_at == clock.now
    assert items[1].status is ItemStatus.OPEN


def test_two_tabs_pressing_next_at_once_move_one_step(learner, database_url):
    attempt = learner.start("test-basics")
    learner.answer(attempt, 1, "B")

    def press(_: int) -> int:
        return learner.next(attempt).status_code

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = list(pool.map(press, range(6)))
    # Each either moved it, found it moved (303), or read it after the move: then the question
    # it stands on is open (409, as for any Next pressed on an open question).
    assert 303 in statuses and set(statuses) <= {303, 409}
    stored, items = _stored(database_url)
    assert stored["current_position"] == 1 and stored["finished_at"] is None
    assert [item.status for item in items] == [ItemStatus.CORRECT, ItemStatus.OPEN]

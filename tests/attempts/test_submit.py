"""An answer's write (app.attempts.service.submit), on SQLite and PostgreSQL: one that counts
does not look its token up first; copies of it sent at once each get its one outcome, the one
that lost the race for the question's row included; what the outcome feeds the review queue is
stored with it, or nothing is."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool
from sqlmodel import Session, select

from app.attempts.models import ItemAttempt, Submission
from app.db import loop_engines, make_engine
from app.review import service as review
from app.review.models import ReviewCard
from tests.support import postgres
from tests.support.learner import Learner
from tests.support.waiting import wait_for

SUBMISSION = re.compile(r'name="submission" value="([^"]+)"')


def _token(learner: Any, attempt: str) -> str:
    found = SUBMISSION.search(learner.get(f"{attempt}/q/1").text)
    assert found is not None
    return found[1]


@contextmanager
def _statements(app_engine: Engine) -> Iterator[list[str]]:
    """The SQL the app's writes send while inside (on PostgreSQL, its write lanes' engine)."""
    found = loop_engines(app_engine)
    engine = found.writes if found is not None else app_engine
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        sent.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _stored(database_url: str) -> tuple[list[Submission], ItemAttempt, list[ReviewCard]]:
    engine = make_engine(database_url)
    with Session(engine) as session:
        submissions = list(session.exec(select(Submission)))
        row = session.exec(select(ItemAttempt).where(ItemAttempt.position == 0)).one()
        cards = list(session.exec(select(ReviewCard)))
    engine.dispose()
    return submissions, row, cards


def test_an_answer_that_counts_sends_no_lookup_of_its_token_and_one_sent_again_does(learner):
    attempt = learner.start("test-basics")
    token = _token(learner, attempt)
    url = f"{attempt}/q/1/answer"
    engine = learner.client.app.state.engine
    with _statements(engine) as first:
        sent = learner.post(url, {"choice": ["A"], "submission": token}, follow_redirects=False)
    with _statements(engine) as again:
        resent = learner.post(url, {"choice": ["A"], "submission": token}, follow_redirects=False)
    assert sent.status_code == resent.status_code == 303
    looked_up = [s for s in first + again if s.startswith("SELECT") and "FROM submission" in s]
    assert not [s for s in first if s in looked_up]
    assert [s for s in again if s in looked_up]  # its claim was refused: its outcome read back
    assert "Attempts: 1 left" in learner.get(f"{attempt}/q/1").text  # counted once


@pytest.mark.parametrize(
    ("answers", "status", "used", "closes"),
    [
        (["B"], "correct", 1, True),  # right first: closed
        (["A"], "open", 1, False),  # a miss with a try left: still open
        (["A", "C"], "incorrect", 2, True),  # a miss on the last try: closed
        (["A", "B"], "correct", 2, True),
    ],
)
def test_an_answer_is_claimed_recorded_and_stored_in_one_statement_on_postgresql(
    learner, clock, database_url, answers, status, used, closes
):
    """The claim records the outcome as it counts the attempt; on PostgreSQL the submission
    goes in the same statement (two on SQLite): what the question page and the results read."""
    attempt = learner.start("test-basics")
    engine = learner.client.app.state.engine
    for number, choice in enumerate(answers, start=1):
        clock.advance(5)
        token = _token(learner, attempt)
        with _statements(engine) as sent:
            answered = learner.post(
                f"{attempt}/q/1/answer", {"choice": [choice], "submission": token}
            )
        assert answered.status_code == 200
        writes = [s for s in sent if s.startswith(("UPDATE", "INSERT", "WITH"))]
        if database_url.startswith("postgresql"):
            assert writes[0].startswith("WITH claimed AS")
            assert len([s for s in writes if "submission" in s]) == 1
        else:
            assert [s.split()[0] for s in writes[:2]] == ["UPDATE", "INSERT"]
        submissions, row, _cards = _stored(database_url)
        assert [(s.number, s.answer) for s in submissions][-1] == (number, choice)
        assert submissions[-1].token == token and submissions[-1].submitted_at == clock.now
    assert (row.status.value, row.attempts_used, row.last_answer) == (status, used, answers[-1])
    assert row.closed_at == (clock.now if closes else None)


def test_copies_of_a_closing_answer_sent_at_once_each_get_its_one_outcome(learner, database_url):
    attempt = learner.start("test-basics")
    token = _token(learner, attempt)
    url = f"{attempt}/q/1/answer"

    def send(_: int) -> int:
        form = {"choice": ["B"], "submission": token}
        return learner.post(url, form, follow_redirects=False).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(send, range(8)))
    assert statuses == [303] * 8  # none refused: the copies that lost the race read its outcome
    submissions, row, _cards = _stored(database_url)
    assert [(s.number, s.answer, s.correct) for s in submissions] == [(1, "B", True)]
    assert row.attempts_used == 1 and row.status.closed
    assert "✓ Correct" in learner.get(f"{attempt}/q/1").text


def test_a_miss_and_its_review_card_are_stored_together_or_not_at_all(
    learner, database_url, monkeypatch
):
    attempt = learner.start("test-basics")
    learner.answer(attempt, 1, "A")  # a first miss: the question stays open
    token = _token(learner, attempt)
    url = f"{attempt}/q/1/answer"
    record = review.record_item_outcome

    def fails(*args: object) -> None:
        raise RuntimeError("the review queue failed")

    monkeypatch.setattr(review, "record_item_outcome", fails)
    with pytest.raises(RuntimeError, match="review queue"):
        learner.post(url, {"choice": ["C"], "submission": token}, follow_redirects=False)
    submissions, row, cards = _stored(database_url)
    assert [s.number for s in submissions] == [1] and row.attempts_used == 1 and cards == []
    monkeypatch.setattr(review, "record_item_outcome", record)
    sent = learner.post(url, {"choice": ["C"], "submission": token}, follow_redirects=False)
    assert sent.status_code == 303
    submissions, row, cards = _stored(database_url)
    assert [(s.number, s.answer) for s in submissions] == [(1, "A"), (2, "C")]
    assert row.status.closed and len(cards) == 1  # the miss entered the review queue with it


@pytest.mark.postgres
def test_on_postgresql_a_copy_that_loses_the_race_for_the_row_gets_the_first_outcome(
    app_factory, postgres_url
):
    """Two copies of a closing answer both begin before either is stored: both wait for the
    question's row, the first closes it, and the second, whose claim then finds it closed,
    reads the first outcome back instead of being refused."""
    with TestClient(app_factory(postgres_url)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        token = _token(learner, attempt)
        url = f"{attempt}/q/1/answer"
        holder = create_engine(postgres_url, poolclass=NullPool)
        sent: list[int] = []
        with holder.connect() as connection:
            connection.execute(text("SELECT id FROM item_attempt WHERE position = 0 FOR UPDATE"))
            form = {"choice": ["B"], "submission": token}
            copies = [
                threading.Thread(
                    target=lambda: sent.append(
                        learner.post(url, form, follow_redirects=False).status_code
                    )
                )
                for _ in range(2)
            ]
            for copy in copies:
                copy.start()
            wait_for(
                lambda: postgres.other_connections(postgres_url, waiting_for_a_lock=True) >= 2,
                10,
                "both copies' claims to wait on the row",
            )
            assert (
                postgres.other_connections(postgres_url, waiting_for_a_lock=True) == 2
            )  # both claims wait on the row
            connection.rollback()
        holder.dispose()
        for copy in copies:
            copy.join()
        assert sent == [303, 303]
        submissions, row, _cards = _stored(postgres_url)
        assert [(s.number, s.answer, s.correct) for s in submissions] == [(1, "B", True)]
        assert row.attempts_used == 1

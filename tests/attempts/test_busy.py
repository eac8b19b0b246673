"""A class at once: writes wait their turn for a bounded time, then a fast 503 whose page sends
the same answer again; an answer sent twice counts once; queued time is not taken off a clock."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlmodel import Session, col, select

from app.attempts import arrival
from app.attempts.models import ItemAttempt, Submission
from app.db import loop_engines, write_lock
from tests.support import postgres
from tests.support.learner import Learner
from tests.support.waiting import wait_for

SUBMISSION = re.compile(r'name="submission" value="([^"]+)"')
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
RESEND = re.compile(r'<form id="busy-retry" method="post" action="([^"]+)"')


def _answers(client: TestClient) -> list[Submission]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return list(session.exec(select(Submission)))


def _first_question(client: TestClient) -> ItemAttempt:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        found = session.exec(select(ItemAttempt).where(col(ItemAttempt.position) == 0)).one()
        return found


def _resend(learner: Learner, busy_page: httpx.Response) -> httpx.Response:
    """What the busy page does by itself: send its form again, its hidden fields as they are."""
    form = busy_page.text[busy_page.text.index('<form id="busy-retry"') :]
    action = RESEND.search(form)
    assert action is not None
    fields: dict[str, list[str]] = {}
    for name, value in HIDDEN.findall(form[: form.index("</form>")]):
        fields.setdefault(name, []).append(value)
    return learner.client.post(action[1], data=fields, follow_redirects=False)


def test_an_answer_refused_while_another_holds_the_write_lock_counts_once_when_sent_again(
    app_factory, sqlite_url
):
    with TestClient(app_factory(sqlite_url, write_wait_s=0.2)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        token = SUBMISSION.search(learner.get(f"{attempt}/q/1").text)
        assert token is not None
        form = {"choice": ["B"], "submission": token[1]}
        lock = write_lock(client.app.state.engine)  # type: ignore[attr-defined]
        assert lock is not None and lock.acquire(timeout=5)  # another worker writes, long
        try:
            refused = learner.post(f"{attempt}/q/1/answer", form, follow_redirects=False)
            also_refused = learner.next(attempt)  # every write waits for the same lock
        finally:
            lock.release()
        # Answered while the lock was still held: the app did not wait for it.
        assert refused.status_code == 503 and also_refused.status_code == 503
        assert int(refused.headers["retry-after"]) >= 1
        assert "Nothing was recorded" in refused.text
        assert f'value="{token[1]}"' in refused.text  # the page sends this very answer again
        assert _answers(client) == []  # refused before anything was stored
        # Serving again: the busy page's resend counts; the same sent once more (its response
        # lost on the way) gets the same outcome and counts nothing more.
        first = _resend(learner, refused)
        again = _resend(learner, refused)
        assert first.status_code == again.status_code == 303
        stored = _answers(client)
        assert [(s.number, s.answer, s.correct) for s in stored] == [(1, "B", True)]
        assert _first_question(client).attempts_used == 1
        assert "✓ Correct" in learner.get(f"{attempt}/q/1").text


def test_a_submission_sent_twice_is_judged_once_and_the_retry_gets_its_outcome(learner):
    attempt = learner.start("test-basics")
    token = SUBMISSION.search(learner.get(f"{attempt}/q/1").text)
    assert token is not None
    wrong = {"choice": ["A"], "submission": token[1]}
    assert learner.post(f"{attempt}/q/1/answer", wrong, follow_redirects=False).status_code == 303
    retry = learner.post(
        f"{attempt}/q/1/answer", wrong, headers={"accept": "application/json"}
    ).json()
    assert retry["replayed"] is True and retry["correct"] is False
    assert retry["attempts_left"] == 1 and retry["status"] == "open"
    page = learner.get(f"{attempt}/q/1").text
    assert "Attempts: 1 left" in page  # the retry used no attempt
    fresh = SUBMISSION.search(page)
    assert fresh is not None and fresh[1] != token[1]  # each rendering names a new answer
    right = {"choice": ["B"], "submission": fresh[1]}
    assert learner.post(f"{attempt}/q/1/answer", right, follow_redirects=False).status_code == 303
    assert "✓ Correct" in learner.get(f"{attempt}/q/1").text


def test_time_a_next_question_waits_in_the_write_queue_is_not_taken_off_its_clock(
    app_factory, sqlite_url, clock
):
    with TestClient(app_factory(sqlite_url, write_wait_s=30)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        learner.answer(attempt, 1, "B")
        learner.get(f"{attempt}/q/1")
        queue = client.app.state.writes  # type: ignore[attr-defined]
        lock = write_lock(client.app.state.engine)  # type: ignore[attr-defined]
        assert lock is not None and lock.acquire(timeout=5)
        moved: list[httpx.Response] = []
        sender = threading.Thread(target=lambda: moved.append(learner.next(attempt)))
        try:
            sender.start()
            while queue.waiting == 0:  # the Next has arrived and waits for its turn
                time.sleep(0.01)
            clock.advance(20)  # the server is slow for 20 s (on the test's clock)
        finally:
            lock.release()
        sender.join()
        assert moved[0].status_code == 303
        state = learner.get(f"/api{attempt}/q/2").json()
        limit = 120  # test-basics' second question
        assert state["seconds_left"] == pytest.approx(limit)  # not limit - 20


@pytest.mark.postgres
def test_on_postgresql_a_write_refused_while_every_lane_is_held_counts_once_when_sent_again(
    app_factory, postgres_url
):
    app = app_factory(postgres_url, write_wait_s=0.3, write_lanes=1)
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        first = SUBMISSION.search(learner.get(f"{attempt}/q/1").text)
        assert first is not None
        row = _first_question(client)
        sent: list[httpx.Response] = []
        holder = create_engine(postgres_url)
        with holder.connect() as connection:
            # Another transaction holds the question's row: the first answer's write takes the
            # only lane and waits there, as a slow write would.
            locked = text("SELECT id FROM item_attempt WHERE id = :id FOR UPDATE")
            connection.execute(locked, {"id": row.id})
            wrong = {"choice": ["A"], "submission": first[1]}
            url = f"{attempt}/q/1/answer"
            sender = threading.Thread(
                target=lambda: sent.append(learner.post(url, wrong, follow_redirects=False))
            )
            sender.start()
            queue = client.app.state.writes  # type: ignore[attr-defined]
            wait_for(
                lambda: (
                    not queue.waiting
                    and postgres.other_connections(postgres_url, waiting_for_a_lock=True)
                ),
                10,
                "the first answer's write to take the lane and wait for the row",
            )
            second = {"choice": ["B"], "submission": "second-answer-token-0001"}
            refused = learner.post(url, second, follow_redirects=False)
            connection.rollback()  # the slow write goes on
        holder.dispose()
        sender.join()
        assert refused.status_code == 503 and "Nothing was recorded" in refused.text
        assert sent[0].status_code == 303  # the held write was not dropped: it waited, counted
        assert [(s.number, s.answer) for s in _answers(client)] == [(1, "A")]
        resent = _resend(learner, refused)
        assert resent.status_code == 303 and _resend(learner, refused).status_code == 303
        stored = sorted((s.number, s.answer, s.correct) for s in _answers(client))
        assert stored == [(1, "A", False), (2, "B", True)]
        assert "✓ Correct" in learner.get(f"{attempt}/q/1").text


def test_an_answer_the_busy_page_sends_again_is_judged_when_it_first_arrived(
    app_factory, sqlite_url, clock
):
    with TestClient(app_factory(sqlite_url, write_wait_s=0.2)) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        token = SUBMISSION.search(learner.get(f"{attempt}/q/1").text)
        assert token is not None
        clock.advance(50)  # 10 s before the 60 s deadline
        lock = write_lock(client.app.state.engine)  # type: ignore[attr-defined]
        assert lock is not None and lock.acquire(timeout=5)
        try:
            form = {"choice": ["B"], "submission": token[1]}
            refused = learner.post(f"{attempt}/q/1/answer", form, follow_redirects=False)
            # What it refused left the queue: a resend is not refused for a write given up.
            assert client.app.state.writes.waiting == 0  # type: ignore[attr-defined]
        finally:
            lock.release()
        assert refused.status_code == 503
        clock.advance(20)  # the resend comes after the deadline and its grace
        assert _resend(learner, refused).status_code == 303  # on time: when it first came
        (stored,) = _answers(client)
        assert stored.correct and stored.submitted_at == clock.now - timedelta(seconds=20)


def test_a_first_arrival_stamp_counts_for_its_own_answer_only():
    sent = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    now = sent + timedelta(seconds=30)
    path, token = "/attempts/1/q/1/answer", "a-submission-token"
    value = arrival.stamp("secret", path, token, ["B"], sent)
    assert arrival.judged_at("secret", path, token, ["B"], value, now) == sent
    others = [
        ("another-secret", path, token, ["B"]),
        ("secret", "/attempts/2/q/1/answer", token, ["B"]),
        ("secret", path, "another-token", ["B"]),
        ("secret", path, token, ["A"]),  # the same stamp on another answer
    ]
    for secret, where, named, choices in others:
        assert arrival.judged_at(secret, where, named, choices, value, now) == now
    later = now + arrival.MAX_AGE
    assert arrival.judged_at("secret", path, token, ["B"], value, later) == later
    assert arrival.judged_at("secret", path, token, ["B"], "12.forged", now) == now


def _on_the_first_question(client: TestClient) -> tuple[Learner, str, str]:
    """A guest who started the basics set: the attempt's URL and the first question's token."""
    learner = Learner(client)
    learner.start_as_guest()
    attempt = learner.start("test-basics")
    token = SUBMISSION.search(learner.get(f"{attempt}/q/1").text)
    assert token is not None
    return learner, attempt, token[1]


@pytest.mark.postgres
def test_on_postgresql_a_restart_under_steady_use_costs_the_learner_nothing(
    app_factory, postgres_url
):
    """The pools' connections were in steady use (so none is checked before it is lent) when
    the server dropped them all: the answer's first read finds its connection dead, reads
    again on a fresh one and renews every pool, and the answer's write goes through."""
    with TestClient(app_factory(postgres_url)) as client:
        learner, attempt, token = _on_the_first_question(client)
        found = loop_engines(client.app.state.engine)  # type: ignore[attr-defined]
        assert found is not None  # the start's write and the question's reads were on the loop
        assert found.reads.pool.checkedin() >= 1 and found.writes.pool.checkedin() >= 1  # type: ignore[attr-defined]
        postgres.end_other_connections(postgres_url)
        form = {"choice": ["B"], "submission": token}
        sent = learner.post(f"{attempt}/q/1/answer", form, follow_redirects=False)
        assert sent.status_code == 303
        assert [(s.number, s.answer, s.correct) for s in _answers(client)] == [(1, "B", True)]
        assert "✓ Correct" in learner.get(f"{attempt}/q/1").text


@pytest.mark.postgres
def test_on_postgresql_an_answer_whose_connection_drops_mid_write_is_sent_again_and_counts_once(
    app_factory, postgres_url, monkeypatch
):
    """The server drops the connection in the middle of the answer's write: the learner gets
    the busy page (not a 500), whose resend counts once."""
    from app.attempts import service

    submit = service.submit
    dropped: list[bool] = []

    def drops_once(session: Session, *args: object, **options: object) -> object:
        if not dropped:
            dropped.append(True)
            session.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        return submit(session, *args, **options)

    with TestClient(app_factory(postgres_url)) as client:
        learner, attempt, token = _on_the_first_question(client)
        monkeypatch.setattr(service, "submit", drops_once)
        form = {"choice": ["B"], "submission": token}
        failed = learner.post(f"{attempt}/q/1/answer", form, follow_redirects=False)
        assert dropped and failed.status_code == 503 and int(failed.headers["retry-after"]) >= 1
        assert "made again" in failed.text and f'value="{token}"' in failed.text
        assert _answers(client) == []
        assert _resend(learner, failed).status_code == 303
        assert _resend(learner, failed).status_code == 303  # once more: counts nothing more
        assert [(s.number, s.answer, s.correct) for s in _answers(client)] == [(1, "B", True)]

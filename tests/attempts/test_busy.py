"""A class at once: writes wait their turn for a bounded time, then a fast 503 whose page sends
the same answer again; an answer sent twice counts once; queued time is not taken off a clock."""

from __future__ import annotations

import re
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.attempts.models import ItemAttempt, Submission
from app.db import write_lock
from tests.support.learner import Learner

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

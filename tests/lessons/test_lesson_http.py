"""The lesson over HTTP: the prediction is recorded before any run is served, the run streams
what the executor sends, the check completes the lesson, and completed_topics reports it.

The executor is a fake at the seam (what the app does with its answer); the real-rank runs are
tests/verification/test_verify_lessons.py and the browser test."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.db import make_engine
from app.lessons import service as lessons
from app.lessons.models import LessonProgress
from tests.conftest import FIXTURES
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

LESSON = "/topics/lesson-drill/lesson"
TOKEN = re.compile(r'name="(?P<name>choice|where-sum|who-calls)" value="(?P<value>[0-9a-f]+)"')


@pytest.fixture
def executor() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
def visitor(app_factory, sqlite_url, executor):
    """A visitor (not signed in) on an app serving the drill lesson."""
    app = app_factory(sqlite_url, executor=executor, challenges_dir=FIXTURES / "lessons")
    with TestClient(app) as client:
        yield Learner(client)


def rows(sqlite_url: str) -> list[LessonProgress]:
    with Session(make_engine(sqlite_url)) as session:
        return list(session.exec(select(LessonProgress).order_by(LessonProgress.id)).all())


def option_values(page: str, name: str) -> list[str]:
    return [m["value"] for m in TOKEN.finditer(page) if m["name"] == name]


def example_html(page: str, example_id: str) -> str:
    """One example's part of the lesson page (up to the next example)."""
    start = page.index(f'id="example-{example_id}"')
    end = page.find('class="lesson-example"', start)
    return page[start : end if end != -1 else len(page)]


def test_the_page_shows_sections_and_prediction_forms_before_any_run(visitor):
    page = visitor.get(LESSON)
    assert page.status_code == 200
    assert page.text.count('data-testid="predict-form"') == 4
    assert "What will rank 1 print?" in page.text
    assert 'data-testid="run-button"' not in page.text  # nothing runs before a prediction
    assert visitor.get("/topics/lesson-drill").text.count('href="/topics/lesson-drill/lesson"')


def test_a_run_before_the_prediction_is_refused_and_runs_nothing(visitor, executor):
    visitor.start_as_guest()
    response = visitor.get(f"{LESSON}/examples/typed-sum/run")
    assert response.status_code == 409 and "Predict first" in response.text
    assert executor.requests == []


def test_a_typed_prediction_is_kept_as_first_given_then_the_run_streams(
    visitor, executor, sqlite_url
):
    visitor.get(LESSON)
    made = visitor.post(
        f"{LESSON}/examples/typed-sum/predict", {"output": "rank 1: 3.0\n"}, follow_redirects=False
    )
    assert made.status_code == 303
    assert made.headers["location"] == f"{LESSON}?run=typed-sum"
    visitor.get(made.headers["location"])  # a new guest: the page's forms carry a new token
    again = visitor.post(
        f"{LESSON}/examples/typed-sum/predict", {"output": "copied later"}, follow_redirects=False
    )
    assert again.status_code == 303
    (row,) = rows(sqlite_url)
    assert (row.topic_id, row.step, row.answer, row.correct) == (
        "lesson-drill",
        "example:typed-sum",
        "rank 1: 3.0\n",
        True,
    )
    page = visitor.get(LESSON).text
    assert "Your prediction was right." in page and 'data-testid="run-button"' in page
    streamed = visitor.get(f"{LESSON}/examples/typed-sum/run")
    assert streamed.headers["content-type"].startswith("text/event-stream")
    (request,) = executor.requests
    assert (request.nproc, request.backend) == (2, "gloo") and "all_reduce(t)" in request.code


def test_an_empty_prediction_is_refused_and_records_nothing(visitor, sqlite_url):
    visitor.get(LESSON)
    response = visitor.post(f"{LESSON}/examples/typed-sum/predict", {"output": "  "})
    assert response.status_code == 400 and "Make a prediction first" in response.text
    assert rows(sqlite_url) == []


def test_htmx_gets_the_example_with_the_run_starting(visitor):
    page = visitor.get(LESSON).text
    first = visitor.post(
        f"{LESSON}/examples/typed-sum/predict", {"output": "x"}, headers={"HX-Request": "true"}
    )
    # The first prediction made a guest (a new CSRF seed): the page is loaded afresh.
    assert first.status_code == 204
    assert first.headers["hx-redirect"] == f"{LESSON}?run=typed-sum"
    page = visitor.get(first.headers["hx-redirect"]).text
    assert page.count('x-init="start()"') == 1  # the example just predicted runs at once
    values = option_values(example_html(page, "chosen-sum"), "choice")
    assert len(values) == 2
    fragment = visitor.post(
        f"{LESSON}/examples/chosen-sum/predict",
        {"choice": values[0]},
        headers={"HX-Request": "true"},
    )
    assert fragment.status_code == 200
    assert 'id="example-chosen-sum"' in fragment.text and 'x-init="start()"' in fragment.text
    assert "<html" not in fragment.text


def completed(sqlite_url: str) -> set[str]:
    user_id = rows(sqlite_url)[0].user_id
    with Session(make_engine(sqlite_url)) as session:
        return lessons.completed_topics(session, user_id)


def test_the_check_completes_the_lesson_only_when_every_answer_is_right(visitor, sqlite_url):
    visitor.get(LESSON)
    # An option's own id is read as itself (app.kinds.order): no need to find the shuffle.
    visitor.post(f"{LESSON}/check", {"where-sum": "B", "who-calls": "A"})
    assert completed(sqlite_url) == set()
    page = visitor.get(LESSON).text
    assert 'data-testid="check-not-yet"' in page and 'data-testid="lesson-completed"' not in page
    visitor.post(f"{LESSON}/check", {"where-sum": "A", "who-calls": "A"})
    assert completed(sqlite_url) == {"lesson-drill"}
    page = visitor.get(LESSON).text
    assert 'data-testid="check-passed"' in page and 'data-testid="lesson-completed"' in page
    visitor.post(f"{LESSON}/check", {"where-sum": "B", "who-calls": "B"})  # a later slip
    assert completed(sqlite_url) == {"lesson-drill"}  # does not undo the completion
    (check,) = [row for row in rows(sqlite_url) if row.step == "check"]
    assert not check.correct and check.completed_at is not None


def test_an_unanswered_check_is_refused(visitor):
    visitor.get(LESSON)
    response = visitor.post(f"{LESSON}/check", {})
    assert response.status_code == 400 and "Answer every question" in response.text


def test_a_topic_without_a_lesson_has_no_lesson_page(visitor):
    assert visitor.get("/topics/no-such-topic/lesson").status_code == 404


def test_a_rank_that_hangs_or_raises_is_said_in_words_once_predicted(visitor):
    """The proven panel says how each rank ends; before the prediction it is not on the page."""
    page = visitor.get(LESSON).text
    assert "hangs: it is still waiting" not in page  # the answer waits for the prediction
    visitor.start_as_guest()
    for example_id in ("hung-ranks", "raising-rank"):
        page = visitor.get(LESSON).text
        values = option_values(example_html(page, example_id), "choice")
        made = visitor.post(
            f"{LESSON}/examples/{example_id}/predict", {"choice": values[0]},
            follow_redirects=False,
        )  # fmt: skip
        assert made.status_code == 303
    page = visitor.get(LESSON).text
    hung, raising = example_html(page, "hung-ranks"), example_html(page, "raising-rank")
    assert "What each rank prints and how it ends" in hung
    for rank in (0, 1):
        assert f"Rank {rank} hangs: it is still waiting for the other ranks" in hung
    assert "Rank 0 ends normally." in raising
    assert (
        "Rank 1 raises <code>RuntimeError</code>, saying something like "
        "“Connection closed by peer”." in raising
    )
    typed = example_html(page, "typed-sum")
    assert "how it ends" not in typed and "ends normally" not in typed  # all end normally


ASKED = re.compile(r'data-testid="check-question" data-question="(?P<id>[a-z-]+)"')


@pytest.fixture
def pool_visitor(app_factory, sqlite_url, executor):
    """A visitor on an app serving the pool lesson (four check questions, two a try)."""
    app = app_factory(sqlite_url, executor=executor, challenges_dir=FIXTURES / "lesson-pool")
    with TestClient(app) as client:
        yield Learner(client)


def test_a_wrong_pick_is_explained_and_the_retry_asks_other_questions(pool_visitor, sqlite_url):
    url = "/topics/lesson-pool/lesson"
    first = ASKED.findall(pool_visitor.get(url).text)
    assert len(first) == 2
    pool_visitor.post(f"{url}/check", {question: "B" for question in first})  # both wrong
    page = pool_visitor.get(url).text
    assert 'data-testid="check-not-yet"' in page and "0 of 2 right" in page
    assert page.count('data-testid="pick-why"') == 2  # each wrong pick says why
    assert page.count('data-testid="reread"') == 2 and 'href="#section-' in page
    retry = ASKED.findall(page)
    assert len(retry) == 2 and not set(retry) & set(first)  # other questions, not a re-pick
    refused = pool_visitor.post(f"{url}/check", {question: "A" for question in first})
    assert refused.status_code == 400  # the missed questions are not what this try asks
    pool_visitor.post(f"{url}/check", {question: "A" for question in retry})
    page = pool_visitor.get(url).text
    assert 'data-testid="check-passed"' in page and 'data-testid="check-form"' not in page
    assert completed(sqlite_url) == {"lesson-pool"}


def test_with_no_other_questions_a_miss_links_the_section_to_reread(visitor):
    visitor.get(LESSON)
    visitor.post(f"{LESSON}/check", {"where-sum": "B", "who-calls": "A"})
    page = visitor.get(LESSON).text
    assert "1 of 2 right" in page and 'href="#section-typed"' in page
    assert "In place, on every rank." not in page  # the key waits: the retry asks it again
    assert ASKED.findall(page) == ["where-sum", "who-calls"]

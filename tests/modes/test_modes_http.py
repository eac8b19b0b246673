"""The untimed modes over HTTP on real databases (SQLite and PostgreSQL), with the fake clock:
what each mode records, what it refuses, and how every mode feeds the review queue."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.db import make_engine
from app.modes.models import ModeAnswer, Quiz
from app.review.models import CardSource, ReviewCard, ReviewLog
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.learner import Learner

PRACTICE = "/topics/drill/practice/modes-drill/world-size"


@pytest.fixture
def content(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "modes", target / "modes")
    shutil.copytree(TEST_CHALLENGES / "basics", target / "basics")
    return target


@pytest.fixture
def visitor(app_factory, database_url, content) -> Iterator[Learner]:
    """A visitor (not signed in) in a browser-like client."""
    with TestClient(app_factory(database_url, challenges_dir=content)) as client:
        yield Learner(client)


def rows(database_url: str, model, **where):
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            query = select(model)
            for name, value in where.items():
                query = query.where(getattr(model, name) == value)
            return list(session.exec(query))
    finally:
        engine.dispose()


def verdict(html: str) -> str:
    found = re.search(r'data-testid="verdict"[^>]*>([^<]+)', html)
    return found[1].strip() if found else ""


def review_count(person: Learner) -> int:
    found = re.search(r">(\d+)</span>", person.get("/review/count").text)
    return int(found[1]) if found else 0


def test_a_visitors_first_practice_answer_signs_them_in_and_a_miss_enters_review(
    visitor: Learner, database_url: str, clock
) -> None:
    visitor.get(PRACTICE)
    wrong = visitor.post(f"{PRACTICE}/answer", {"choice": "A"})
    assert wrong.status_code == 200 and verdict(wrong.text) == "✗ Not quite — try again."
    assert "One process would be no distribution at all." in wrong.text  # the pick's feedback
    assert 'data-testid="explanation"' not in wrong.text  # the key waits for a right answer
    assert review_count(visitor) == 1
    right = visitor.post(f"{PRACTICE}/answer", {"choice": "B"})
    assert verdict(right.text) == "✓ Correct" and 'data-testid="explanation"' in right.text
    answers = rows(database_url, ModeAnswer, mode="practice")
    assert [(a.answer, a.correct) for a in answers] == [("A", False), ("B", True)]
    # Right after a miss is graded Good: the card leaves the queue for later.
    assert review_count(visitor) == 0
    assert [log.grade for log in rows(database_url, ReviewLog)] == [1, 3]
    # Practice never touches the timed challenge's standing.
    topic = visitor.get("/topics/drill").text
    assert "1/3 answered right" in topic and 'data-testid="status">Not started' in topic


def test_practice_refuses_a_bad_answer_and_an_item_of_another_topic(visitor: Learner) -> None:
    visitor.get(PRACTICE)
    assert visitor.post(f"{PRACTICE}/answer", {"choice": "Z"}).status_code == 400
    assert visitor.get("/topics/drill/practice/test-basics/world-size").status_code == 404
    assert visitor.get("/topics/nope").status_code == 404
    assert visitor.get("/topics/" + "x" * 101).status_code == 422


def test_a_timed_miss_and_a_time_out_enter_review(visitor: Learner, database_url: str, clock):
    attempt = visitor.start("modes-drill")
    visitor.get(attempt)  # signed in as a guest by Start: the page carries the new token
    assert visitor.answer(attempt, 1, "A").status_code == 303
    assert visitor.answer(attempt, 1, "A").status_code == 303  # the last attempt: closed wrong
    visitor.next(attempt)
    clock.advance(10_000)  # question 2 runs out of time
    visitor.post(f"{attempt}/q/2/expire", follow_redirects=False)
    visitor.post(f"{attempt}/q/2/expire", follow_redirects=False)  # reported twice: one miss
    cards = rows(database_url, ReviewCard, source=CardSource.ITEM)
    assert sorted(card.card_id for card in cards) == ["all-reduce-sum", "world-size"]
    assert len(rows(database_url, ReviewLog)) == 2
    page = visitor.get("/review").text
    assert "2 due" in page and 'data-testid="review-current"' in page


def test_a_quiz_draws_from_items_and_cards_and_each_question_is_answered_once(
    visitor: Learner, database_url: str
) -> None:
    visitor.get("/topics/drill/quiz")
    started = visitor.post("/topics/drill/quiz", follow_redirects=False)
    quiz_url = started.headers["location"]
    (quiz,) = rows(database_url, Quiz)
    assert quiz.total == 6  # 3 practice items + 3 cards: all of them (at most 10)
    right = 0
    for number in range(1, quiz.total + 1):
        page = visitor.get(quiz_url).text
        kind = re.search(r'data-kind="(\w+)"', page)[1]  # type: ignore[index]
        choice = {"flashcard": "knew", "numeric": "1", "choice": "B"}[kind]
        response = visitor.post(f"{quiz_url}/q/{number}/answer", {"choice": choice})
        right += verdict(response.text) == "✓ Correct"
        again = visitor.post(f"{quiz_url}/q/{number}/answer", {"choice": choice})
        assert again.status_code == 409
    score = visitor.get(quiz_url).text
    assert f'data-testid="quiz-score">{right}/6<' in score
    assert f"Best {right}/6" in visitor.get("/topics/drill").text
    other = TestClient(visitor.client.app)
    assert other.get(quiz_url, follow_redirects=False).status_code in (303, 401)


def test_flashcards_show_due_cards_first_then_new_ones_up_to_the_daily_limit(
    app_factory, database_url, content, clock
) -> None:
    app = app_factory(database_url, challenges_dir=content, new_cards_per_day=2)
    with TestClient(app) as client:
        person = Learner(client)
        deck = "/topics/drill/flashcards"
        first = person.get(deck).text
        assert 'data-card-id="what-is-rank"' in first and "2 new today" in first
        graded = person.post(f"{deck}/what-is-rank/grade", {"grade": "1"})  # Again: 1 min
        assert 'data-testid="next-due"' in graded.text
        assert 'data-card-id="what-is-rank"' in graded.text  # due again at once (learn-ahead)
        person.post(f"{deck}/what-is-rank/grade", {"grade": "4"})  # Easy: days away
        page = person.post(f"{deck}/what-is-world-size/grade", {"grade": "3"}).text
        assert 'data-testid="deck-done"' in page  # two new today: the limit is reached
        assert "0 due · 0 new today · 1 never seen" in page
        clock.advance(24 * 3600)  # a new day: the cards seen yesterday are due, and come first
        page = person.get(deck).text
        shown = []
        while 'data-card-id="who-is-rank-zero"' not in page:
            card = re.search(r'data-card-id="([^"]+)"', page)[1]  # type: ignore[index]
            assert "0 due" not in page
            shown.append(card)
            page = person.post(f"{deck}/{card}/grade", {"grade": "3"}).text
        assert sorted(shown) == ["what-is-rank", "what-is-world-size"]
        assert "0 due · 1 new today" in page  # then today's new cards
        assert person.post(f"{deck}/what-is-rank/grade", {"grade": "5"}).status_code == 422
        logs = rows(database_url, ReviewLog)
        assert [log.grade for log in logs] == [1, 4, 3, 3, 3] and {log.mode for log in logs} == {
            "flashcards"
        }


def test_an_explanation_is_scored_kept_in_full_and_a_poor_one_enters_review(
    visitor: Learner, database_url: str
) -> None:
    url = "/topics/drill/explain/explain-averaging"
    visitor.get(url)
    text = "Every rank has its own batch. DDP does not average the gradients. " * 40
    scored = visitor.post(f"{url}/answer", {"choice": text.strip()}).text
    assert "You covered 1/3 concepts." in scored
    assert 'data-testid="model-answer"' in scored
    (answer,) = rows(database_url, ModeAnswer, mode="explain")
    assert answer.answer == text.strip() and answer.points == 1 and not answer.correct
    assert review_count(visitor) == 1
    too_long = visitor.post(f"{url}/answer", {"choice": "x" * 4001})
    assert too_long.status_code == 400

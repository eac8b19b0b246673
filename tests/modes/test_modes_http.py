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
        right += verdict(response.text) in ("✓ Correct", "✓ You knew it")
        again = visitor.post(f"{quiz_url}/q/{number}/answer", {"choice": choice})
        assert again.status_code == 409
    score = visitor.get(quiz_url).text
    assert f'data-testid="quiz-score">{right}/6<' in score
    assert f"Best {right}/6" in visitor.get("/topics/drill").text
    other = TestClient(visitor.client.app)
    assert other.get(quiz_url, follow_redirects=False).status_code in (303, 401)


def shown_card(page: str) -> tuple[str, str]:
    """The card a flashcard page shows, and the token its grade form carries."""
    card = re.search(r'data-card-id="([^"]+)"', page)
    token = re.search(r'name="shown" value="([0-9a-f]+)"', page)
    assert card and token, page
    return card[1], token[1]


def grade_shown(person: Learner, page: str, grade: int, deck: str = "drill") -> str:
    """Grade the card this page shows, as its buttons do; the page it leads to."""
    card, token = shown_card(page)
    back = re.search(r'name="back" value="([a-z]+)"', page)
    url = f"/topics/{deck}/flashcards/{card}/grade"
    response = person.post(url, {"grade": str(grade), "shown": token, "back": back and back[1]})
    assert response.status_code == 200, response.text
    return response.text


def test_flashcards_show_due_cards_first_then_new_ones_up_to_the_daily_limit(
    app_factory, database_url, content, clock
) -> None:
    app = app_factory(database_url, challenges_dir=content, new_cards_per_day=2)
    with TestClient(app) as client:
        person = Learner(client)
        deck = "/topics/drill/flashcards"
        first = person.get(deck).text
        assert 'data-card-id="what-is-rank"' in first and "2 new today" in first
        graded = grade_shown(person, first, 1)  # Again: back in a minute, not at once
        assert 'data-testid="next-due"' in graded and "in 1 minute" in graded
        assert 'data-card-id="what-is-world-size"' in graded
        assert "0 due · 1 new today" in graded
        page = grade_shown(person, graded, 3)  # Good: its next step, ten minutes on
        # Two new today: the limit is reached, nothing else waits, so the missed card, due
        # within the learn-ahead limit (20 minutes, as Anki's), comes at once, then the other.
        assert 'data-testid="deck-done"' not in page
        counts = re.search(r'deck-counts">([^<]*)<', page)
        assert counts is not None and counts[1] == "2 due · 0 new today · 1 never seen", counts
        assert 'data-card-id="what-is-rank"' in page
        clock.advance(60)  # its step is over: the missed card is due anyway
        page = person.get(deck).text
        assert 'data-card-id="what-is-rank"' in page and "1 due · 0 new today" in page
        page = grade_shown(person, page, 3)
        assert 'data-card-id="what-is-world-size"' in page  # ahead too: due in nine minutes
        clock.advance(24 * 3600)  # a new day: the cards seen yesterday are due, and come first
        page = person.get(deck).text
        shown = []
        while 'data-card-id="who-is-rank-zero"' not in page:
            assert "0 due" not in page
            shown.append(shown_card(page)[0])
            page = grade_shown(person, page, 3)
        assert sorted(shown) == ["what-is-rank", "what-is-world-size"]
        assert "0 due · 1 new today" in page  # then today's new cards
        card, token = shown_card(page)
        refused = person.post(f"{deck}/{card}/grade", {"grade": "5", "shown": token})
        assert refused.status_code == 422
        logs = rows(database_url, ReviewLog)
        assert [log.grade for log in logs] == [1, 3, 3, 3, 3] and {log.mode for log in logs} == {
            "flashcards"
        }


def test_a_grade_is_taken_only_for_the_card_its_page_showed_and_only_once(
    visitor: Learner, database_url: str
) -> None:
    deck = "/topics/drill/flashcards"
    page = visitor.get(deck).text
    card, token = shown_card(page)
    assert visitor.post(f"{deck}/{card}/grade", {"grade": "3"}).status_code == 422  # no token
    # A card no page showed (the token is another card's) is refused, and nothing changes.
    other = visitor.post(f"{deck}/who-is-rank-zero/grade", {"grade": "3", "shown": token})
    assert other.status_code == 409 and "nothing was changed" in other.text
    assert rows(database_url, ReviewLog) == []
    assert visitor.post(f"{deck}/{card}/grade", {"grade": "3", "shown": token}).status_code == 200
    # The same form sent again (a second tab, a resend): the card has moved on, refused.
    again = visitor.post(f"{deck}/{card}/grade", {"grade": "1", "shown": token})
    assert again.status_code == 409
    assert [log.grade for log in rows(database_url, ReviewLog)] == [3]


def test_a_grade_token_shown_to_one_learner_is_refused_for_another(
    visitor: Learner, database_url: str
) -> None:
    deck = "/topics/drill/flashcards"
    visitor.start_as_guest()
    card, token = shown_card(visitor.get(deck).text)  # shown to the first guest
    visitor.client.cookies.clear()  # another browser: a second guest, the card new to them too
    visitor.csrf = ""
    visitor.start_as_guest()
    stolen = visitor.post(f"{deck}/{card}/grade", {"grade": "4", "shown": token})
    assert stolen.status_code == 409 and "nothing was changed" in stolen.text
    assert rows(database_url, ReviewLog) == []
    _card, own = shown_card(visitor.get(deck).text)  # the token of their own page is taken
    assert visitor.post(f"{deck}/{card}/grade", {"grade": "4", "shown": own}).status_code == 200


def test_each_grade_button_shows_its_interval_and_the_last_grade_can_be_undone(
    visitor: Learner, database_url: str
) -> None:
    deck = "/topics/drill/flashcards"
    page = visitor.get(deck).text
    intervals = dict(re.findall(r'data-testid="interval-(\d)">([^<]+)<', page))
    assert (intervals["1"], intervals["3"]) == ("1 min", "10 min")
    assert intervals["4"].endswith(" d")
    graded = grade_shown(visitor, page, 4)
    log = re.search(r'name="log" value="(\d+)"', graded)
    assert log, graded
    undone = visitor.post("/cards/undo", {"log": log[1]})
    assert undone.status_code == 200 and 'data-card-id="what-is-rank"' in undone.text
    assert rows(database_url, ReviewLog) == [] and rows(database_url, ReviewCard) == []
    assert "0 due · 3 new today" in undone.text  # new again, so not counted as seen today
    # Undone once: that grade is gone, and a second undo is refused.
    again = visitor.post("/cards/undo", {"log": log[1]})
    assert again.status_code == 409


def test_the_daily_queue_needs_a_learner_and_shows_every_topics_cards(visitor: Learner) -> None:
    assert visitor.get("/cards", follow_redirects=False).status_code in (303, 401)
    page = visitor.get("/topics/drill/flashcards").text
    grade_shown(visitor, page, 3)
    queue = visitor.get("/cards").text
    assert "Today&#39;s cards" in queue or "Today's cards" in queue
    assert 'data-card-id="what-is-world-size"' in queue
    after = grade_shown(visitor, queue, 4)
    assert 'data-testid="scheduled"' in after and "<h1>Today" in after  # back to /cards


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


def test_a_keyword_list_earns_no_concept_and_does_not_count_as_explained(
    visitor: Learner, database_url: str
) -> None:
    # Issue 37: a bare list of the right words scored enough concepts for the topic's
    # explain-it step to count as done. Now none is credited; those it names are unsure, and
    # the model answer is shown to compare.
    url = "/topics/drill/explain/explain-averaging"
    visitor.get(url)
    salad = "every rank batch, gradient averaging, models stay in sync"
    scored = visitor.post(f"{url}/answer", {"choice": salad}).text
    assert "You covered 0/3 concepts." in scored
    assert 'data-verdict="credited"' not in scored
    assert scored.count('data-verdict="unsure"') == 2
    assert 'data-testid="unsure-note"' in scored and 'data-testid="model-answer"' in scored
    (answer,) = rows(database_url, ModeAnswer, mode="explain")
    assert answer.points == 0 and not answer.correct  # progress counts only a right answer

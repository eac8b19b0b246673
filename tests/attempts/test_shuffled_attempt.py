"""Shuffled options over HTTP: the learner's order is their attempt's, stable on reload, lettered
as shown; the token sent is stored and judged as the option's own id; the badge asks for first
tries."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.attempts.models import Submission
from app.db import make_engine
from tests.conftest import TEST_CHALLENGES
from tests.support.learner import Learner
from tests.support.options import choice_item, plain, shown_options

ITEM = choice_item(TEST_CHALLENGES, "test-basics")  # test-basics' first question, keyed B


def shown(learner: Learner, url: str) -> list[tuple[str, str, str]]:
    """(option id, letter shown, value sent) of each option, top to bottom. The page carries no
    ids: each is found by the option's text."""
    by_text = {plain(option.text): option.id for option in ITEM.options}
    found = [
        (by_text[label.text], label.letter, label.value)
        for label in shown_options(learner.get(url).text)
    ]
    assert found, "no options on the page"
    return found


def test_the_learner_picks_the_key_by_its_shown_letter_and_the_option_id_is_stored(
    learner, database_url
):
    attempt = learner.start("test-basics")
    options = shown(learner, f"{attempt}/q/1")
    assert [letter for _, letter, _ in options] == ["A", "B", "C"]  # lettered after shuffling
    assert shown(learner, f"{attempt}/q/1") == options  # a reload shows the same order
    _, key_letter, key_value = next(option for option in options if option[0] == "B")
    assert key_value != "B"  # a token of this showing, not the option's id
    assert learner.answer(attempt, 1, key_value).status_code == 303
    closed = learner.get(f"{attempt}/q/1").text
    assert "✓ Correct" in closed
    assert shown(learner, f"{attempt}/q/1") == options  # answered: still the same order
    engine = make_engine(database_url)
    with Session(engine) as session:
        stored = session.exec(select(Submission)).one()
    engine.dispose()
    assert (stored.answer, stored.correct) == ("B", True)
    learner.next(attempt)
    learner.answer(attempt, 2, "3.33")
    learner.next(attempt)
    results = learner.get(f"{attempt}/results").text
    # The results table shows the letter the learner saw, for their answer and for the key.
    row = re.search(r'<tr data-status="correct">(.*?)</tr>', results, re.S)
    assert row is not None
    cells = re.findall(r"<td>(.*?)</td>", row[1], re.S)
    assert cells[3] == key_letter and cells[4] == key_letter


def test_each_attempt_has_its_own_order(app_factory, database_url):
    orders = set()
    with TestClient(app_factory(database_url)) as client:
        for _ in range(8):
            learner = Learner(client)
            client.cookies.clear()
            learner.start_as_guest()
            attempt = learner.start("test-basics")
            orders.add(tuple(option_id for option_id, _, _ in shown(learner, f"{attempt}/q/1")))
    assert len(orders) > 1  # 8 attempts in one order: a 1 in 6^7 chance if shuffled


def test_a_right_answer_at_the_second_try_scores_less_and_earns_no_badge(learner):
    attempt = learner.start("test-basics")
    assert learner.answer(attempt, 1, "A").status_code == 303  # wrong
    assert learner.answer(attempt, 1, "B").status_code == 303  # right at the second try
    learner.next(attempt)
    learner.answer(attempt, 2, "3.33")
    learner.next(attempt)
    results = learner.get(f"{attempt}/results").text
    assert "2 / 2 correct" in results
    assert 'data-testid="first-try">1 at the first try' in results
    assert "score 83%" in results  # (2/3 + 1) / 2: a second try is worth two thirds
    assert "Badge earned" not in results and 'data-testid="no-badge"' in results

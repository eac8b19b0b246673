"""Badges mean first sight: a question counts toward the badge only where its variant was shown
to the learner for the first time in that attempt; a retake from memory earns none."""

from __future__ import annotations

import random
import re

from fastapi.testclient import TestClient
from sqlmodel import Session, delete, select

from app.attempts import rules
from app.attempts.models import ItemAttempt, ItemSighting
from app.challenges.catalog import Catalog
from app.config import ROOT
from app.db import make_engine


def take_test_basics_right(learner, clock) -> str:
    """Answer both questions of the fixture set right at the first try; the attempt's URL."""
    attempt = learner.start("test-basics")
    assert learner.answer(attempt, 1, "B").status_code == 303
    learner.next(attempt)
    clock.advance(20)
    assert learner.answer(attempt, 2, "3.33").status_code == 303
    learner.next(attempt)
    return attempt


def test_a_perfect_first_attempt_earns_the_badge_and_a_retake_from_memory_does_not(learner, clock):
    first_url = f"{take_test_basics_right(learner, clock)}/results"
    first = learner.get(first_url).text
    assert "Badge earned" in first and 'data-testid="seen-before"' not in first
    retake = learner.get(f"{take_test_basics_right(learner, clock)}/results").text
    assert "2 / 2 correct" in retake
    assert "Badge earned" not in retake
    assert retake.count('data-testid="seen-before"') == 2  # says which did not count, and why
    assert 'data-testid="seen-before-note"' in retake and "first time you see it" in retake
    again = learner.get(first_url).text  # the first attempt's showing was its own: all counted
    assert "Badge earned" in again and 'data-testid="seen-before"' not in again


def test_an_attempt_from_before_sightings_were_recorded_marks_nothing_seen_before(
    learner, clock, database_url
):
    attempt = take_test_basics_right(learner, clock)
    engine = make_engine(database_url)
    with Session(engine) as session:  # as an attempt finished before this was recorded
        session.execute(delete(ItemSighting))
        session.commit()
    engine.dispose()
    results = learner.get(f"{attempt}/results").text
    assert "Badge earned" in results and 'data-testid="seen-before"' not in results


def test_each_question_shown_is_recorded_once_with_the_attempt_that_first_showed_it(
    learner, clock, database_url
):
    take_test_basics_right(learner, clock)
    take_test_basics_right(learner, clock)
    engine = make_engine(database_url)
    with Session(engine) as session:
        seen = session.exec(select(ItemSighting)).all()
        rows = session.exec(select(ItemAttempt)).all()
    engine.dispose()
    assert sorted((s.item_id, s.variant_key, s.mode) for s in seen) == [
        ("speedup", "", "timed"),
        ("world-size", "", "timed"),
    ]
    first_attempt = min(row.set_attempt_id for row in rows)
    assert {s.set_attempt_id for s in seen} == {first_attempt}
    assert {row.variant_key for row in rows} == {""}  # items without parameters


def test_the_set_page_says_how_the_badge_is_earned(learner):
    page = learner.get("/sets/test-basics").text
    assert 'data-testid="badge-rule"' in page and "the first time you see it" in page


def test_the_first_tries_the_set_page_asks_for_are_the_fewest_the_badge_accepts():
    for total in (1, 5, 6, 10, 11, 20):
        needed = rules.first_tries_needed(total)
        assert rules.Score(total, total, needed).perfect
        assert not rules.Score(total, total, needed - 1).perfect
    assert rules.first_tries_needed(6) == 6 and rules.first_tries_needed(20) == 18


def test_every_shipped_set_page_states_the_badge_rule_and_no_other(app_factory, sqlite_url):
    """Issue 37: shipped sets said "Get all challenges correct to earn this badge!" beside the
    real rule (every question right, the first tries it asks for, each on first sight)."""
    catalog = Catalog.load(ROOT / "challenges")
    app = app_factory(sqlite_url, challenges_dir=ROOT / "challenges")
    stated = {}
    with TestClient(app) as client:
        for set_id in catalog.sets:
            page = client.get(f"/sets/{set_id}").text
            box = re.search(r'<article class="badge-box">(.*?)</article>', page, re.DOTALL)
            assert box is not None, set_id
            text = " ".join(re.sub(r"<[^>]+>", " ", box.group(1)).split())
            facts = catalog.facts_of(set_id)
            assert facts is not None
            count = facts.question_count
            needed = rules.first_tries_needed(count)
            asked = "every one" if needed == count else f"at least {needed} of the {count}"
            rule = f"answer every question right, {asked} at the first try, each the first"
            stated[set_id] = ("Get all" not in text, rule in text)
    assert stated and set(stated.values()) == {(True, True)}


def test_a_variant_not_yet_shown_is_drawn_until_none_is_left():
    keys = ("a1", "b2", "c3")
    draw = random.Random(7)
    assert {rules.draw_variant(keys, {"a1", "c3"}, draw) for _ in range(20)} == {"b2"}
    assert rules.draw_variant(keys, set(keys), draw) in keys  # all seen: any (counts for none)
    assert rules.draw_variant((), set(), draw) == ""


def test_the_badge_needs_a_perfect_score_and_every_question_on_first_sight():
    perfect = rules.score([(rules.ItemStatus.CORRECT, 1)] * 2)
    assert rules.badge_earned(perfect, [True, True])
    assert not rules.badge_earned(perfect, [True, False])
    short = rules.score([(rules.ItemStatus.CORRECT, 1), (rules.ItemStatus.INCORRECT, 2)])
    assert not rules.badge_earned(short, [True, True])

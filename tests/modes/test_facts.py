"""No session asks the same fact twice: a quick quiz draws one entry per fact, a flashcard day
and a review session skip an entry whose fact another one already asked today (real database;
the clock is an argument)."""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from app.accounts.models import User
from app.challenges import course_rules
from app.challenges.catalog import Catalog, TopicView
from app.challenges.loader import load_path
from app.config import ROOT
from app.db import make_engine, write_session
from app.modes import rules
from app.modes import service as modes
from app.review import service as review
from app.review.scheduling import Grade
from tests.conftest import FIXTURES
from tests.support.content import edit
from tests.support.learner import Learner

YESTERDAY = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)
TODAY = YESTERDAY + timedelta(days=1)
TOMORROW = TODAY + timedelta(days=1)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    """The drill topic with two facts each asked twice: by two cards, and by two set items."""
    content = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "modes", content / "drill")
    topic, items = content / "drill" / "topic.yaml", content / "drill" / "set.yaml"
    edit(topic, "  - id: what-is-rank\n", "  - id: what-is-rank\n    fact: rank-meaning\n")
    edit(
        topic,
        "  - id: what-is-world-size\n",
        "  - id: what-is-world-size\n    fact: rank-meaning\n",
    )
    edit(items, "  - id: world-size\n", "  - id: world-size\n    fact: rank-count\n")
    edit(items, "  - id: all-reduce-sum\n", "  - id: all-reduce-sum\n    fact: rank-count\n")
    loaded = Catalog.load(content)
    assert loaded.errors == []
    return loaded


@pytest.fixture
def drill(catalog: Catalog) -> TopicView:
    topic = catalog.topic("drill")
    assert topic is not None
    return topic


@pytest.fixture
def session(database_url: str) -> Iterator[Session]:
    engine = make_engine(database_url)
    with write_session(engine) as db:
        yield db
    engine.dispose()


@pytest.fixture
def learner(session: Session) -> int:
    user = User(created_at=YESTERDAY)
    session.add(user)
    session.commit()
    assert user.id is not None
    return user.id


def ids(entries: list) -> list[str]:
    return [entry.item.id for entry in entries]


def test_a_quick_quiz_asks_each_fact_once_and_every_entry_can_be_drawn(drill: TopicView) -> None:
    pool = [*drill.practice, *drill.cards]
    assert len(pool) == 6  # two set items, the topic's own item, three cards
    drawn_ever: set[str] = set()
    for seed in range(40):
        drawn = rules.draw_quiz(pool, modes.QUIZ_MAX, random.Random(seed))
        facts = [entry.item.fact for entry in drawn if entry.item.fact is not None]
        assert sorted(facts) == ["rank-count", "rank-meaning"], ids(drawn)
        assert len(drawn) == 4
        drawn_ever.update(ids(drawn))
    assert drawn_ever == {entry.item.id for entry in pool}  # either twin may be the one asked


def test_a_pool_with_no_shared_fact_is_drawn_as_before() -> None:
    catalog = Catalog.load(FIXTURES / "modes")
    topic = catalog.topic("drill")
    assert topic is not None
    pool = [*topic.practice, *topic.cards]
    assert rules.draw_quiz(pool, 10, random.Random(7)) == random.Random(7).sample(pool, 6)


def test_a_flashcard_day_asks_a_fact_once_even_when_both_cards_fall_due(
    session: Session, learner: int, drill: TopicView
) -> None:
    rank, world, _zero = drill.cards  # what-is-rank and what-is-world-size share a fact
    for card in (rank, world):
        review.grade(session, learner, modes.card_key(card), Grade.AGAIN, "flashcards", YESTERDAY)
    deck = modes.deck(session, learner, drill, TODAY, new_per_day=10)
    assert ids(deck.due) == ["what-is-rank"] and ids(deck.new) == ["who-is-rank-zero"]
    review.grade(session, learner, modes.card_key(rank), Grade.EASY, "flashcards", TODAY)
    # The twin is still due, but its fact was asked today: not again before tomorrow.
    assert ids(modes.deck(session, learner, drill, TODAY + timedelta(hours=1), 10).due) == []
    assert ids(modes.deck(session, learner, drill, TOMORROW, 10).due) == ["what-is-world-size"]


def test_a_new_card_whose_fact_the_learner_studies_is_not_new_to_them(
    session: Session, learner: int, drill: TopicView
) -> None:
    rank = drill.cards[0]
    assert ids(modes.deck(session, learner, drill, YESTERDAY, 10).new) == [
        "what-is-rank", "who-is-rank-zero"
    ]  # fmt: skip
    review.grade(session, learner, modes.card_key(rank), Grade.GOOD, "flashcards", YESTERDAY)
    deck = modes.deck(session, learner, drill, TODAY, 10)
    assert ids(deck.new) == ["who-is-rank-zero"] and deck.unseen == 1


def test_a_review_session_asks_a_fact_once_and_a_miss_of_the_same_item_comes_back(
    session: Session, learner: int, catalog: Catalog
) -> None:
    world_size = catalog.entry("modes-drill", "world-size")
    all_reduce = catalog.entry("modes-drill", "all-reduce-sum")
    assert world_size is not None and all_reduce is not None
    for entry in (world_size, all_reduce):
        modes.feed_review(session, learner, entry, False, False, "practice", YESTERDAY)
    assert ids(modes.review_queue(session, learner, TODAY, catalog)) == ["world-size"]
    modes.feed_review(session, learner, world_size, False, False, "review", TODAY)  # missed again
    assert ids(modes.review_queue(session, learner, TODAY + timedelta(minutes=2), catalog)) == [
        "world-size"
    ]  # the same item comes back; its twin waits
    modes.feed_review(session, learner, world_size, True, False, "review", TODAY)
    # Still learning it, the item may come back today; its twin may not.
    assert "all-reduce-sum" not in ids(
        modes.review_queue(session, learner, TODAY + timedelta(hours=1), catalog)
    )
    assert ids(modes.review_queue(session, learner, TOMORROW, catalog)) == ["all-reduce-sum"]


# Saturday 28 November 2026 in Los Angeles (PST, UTC-8): 15:00 is still Saturday in UTC, 19:30
# is already Sunday there (tests/browser/test_clock.py's evening).
SATURDAY_AFTERNOON_IN_LOS_ANGELES = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
SATURDAY_EVENING_IN_LOS_ANGELES = datetime(2026, 11, 29, 3, 30, tzinfo=UTC)


def test_review_counts_asked_today_from_the_learners_midnight_not_utcs(
    app_factory, database_url: str, clock, catalog: Catalog, tmp_path: Path
) -> None:
    """Issue 37: a learner in Los Angeles who reviewed a fact at 15:00 is not asked it again by
    its twin at 19:30 the same Saturday, though UTC has turned over to Sunday since."""
    clock.now = SATURDAY_EVENING_IN_LOS_ANGELES
    with TestClient(app_factory(database_url, challenges_dir=tmp_path / "challenges")) as client:
        person = Learner(client)
        person.start_as_guest()
        engine = make_engine(database_url)
        with write_session(engine) as db:
            user_id = db.exec(select(func.max(User.id))).one()
            world_size = catalog.entry("modes-drill", "world-size")
            all_reduce = catalog.entry("modes-drill", "all-reduce-sum")
            assert user_id is not None and world_size is not None and all_reduce is not None
            friday = SATURDAY_AFTERNOON_IN_LOS_ANGELES - timedelta(days=1)
            for entry in (world_size, all_reduce):
                modes.feed_review(db, user_id, entry, False, False, "practice", friday)
            modes.feed_review(
                db, user_id, world_size, True, False, "review", SATURDAY_AFTERNOON_IN_LOS_ANGELES
            )
        engine.dispose()
        client.cookies.set("tz", "America/Los_Angeles")
        in_los_angeles = person.get("/review").text
        client.cookies.set("tz", "UTC")
        in_utc = person.get("/review").text
    assert "Sum of ranks" not in in_los_angeles  # its fact was asked this (Saturday) afternoon
    assert "Sum of ranks" in in_utc  # in UTC that afternoon was yesterday


def test_no_shipped_quiz_asks_one_fact_twice() -> None:
    """The shipped course: every item and card a quiz draws from names its fact, several facts
    are asked by more than one entry, and no draw asks any fact twice."""
    shipped = Catalog.load(ROOT / "challenges")
    assert shipped.errors == []
    # The rule `ranklab validate` reports at the file: every card and quiz-drawn item names a fact.
    assert course_rules.fact_problems(load_path(ROOT / "challenges")) == []
    shared = 0
    for topic in shipped.topics():
        pool = [*topic.practice, *topic.cards]
        facts = [entry.item.fact for entry in pool]
        shared += len(facts) - len(set(facts))
        for seed in range(30):
            drawn = rules.draw_quiz(pool, modes.QUIZ_MAX, random.Random(seed))
            asked = [entry.item.fact for entry in drawn]
            assert len(asked) == len(set(asked)), (topic.id, seed, ids(drawn))
    assert shared > 0  # the rule has twins to keep apart


def test_a_topics_review_count_is_what_the_review_page_asks(
    app_factory, database_url: str, clock, catalog: Catalog, tmp_path: Path
) -> None:
    """Issue 37: the topic page's "due" count for review applies the Review page's own rules (a
    fact once, none asked earlier in the learner's day in their zone), so the two agree."""
    clock.now = SATURDAY_EVENING_IN_LOS_ANGELES
    with TestClient(app_factory(database_url, challenges_dir=tmp_path / "challenges")) as client:
        person = Learner(client)
        person.start_as_guest()
        engine = make_engine(database_url)
        with write_session(engine) as db:
            user_id = db.exec(select(func.max(User.id))).one()
            world_size = catalog.entry("modes-drill", "world-size")
            all_reduce = catalog.entry("modes-drill", "all-reduce-sum")
            assert user_id is not None and world_size is not None and all_reduce is not None
            friday = SATURDAY_AFTERNOON_IN_LOS_ANGELES - timedelta(days=1)
            for entry in (world_size, all_reduce):
                modes.feed_review(db, user_id, entry, False, False, "practice", friday)
            modes.feed_review(
                db, user_id, world_size, True, False, "review", SATURDAY_AFTERNOON_IN_LOS_ANGELES
            )
        engine.dispose()
        counts = {}
        for zone in ("America/Los_Angeles", "UTC"):
            client.cookies.set("tz", zone)
            page = person.get("/review").text
            asked = re.search(r'data-testid="review-due">(\d+) due', page)
            topic = re.search(
                r'data-mode="review">.*?data-testid="mode-state">(?:(\d+) due|Nothing due)',
                person.get("/topics/drill").text,
                re.DOTALL,
            )
            assert asked is not None and topic is not None
            counts[zone] = (int(asked.group(1)), int(topic.group(1) or 0))
    # Two cards are due, but they ask one fact: the Review page asks one, and so says the topic.
    assert counts["UTC"] == (1, 1)
    asked_in_los_angeles, topic_in_los_angeles = counts["America/Los_Angeles"]
    assert topic_in_los_angeles == asked_in_los_angeles

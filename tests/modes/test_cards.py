"""Flashcard queues on a real database with the fake clock: a card in a learning step comes back
after its step, behind the cards due before it; one daily queue takes every topic's cards, due
ones first, then new ones up to the day's limit."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlmodel import Session

from app.accounts.models import User
from app.challenges.catalog import Catalog, TopicView
from app.db import make_engine, write_session
from app.modes import service as modes
from app.review import service as review
from app.review.scheduling import Grade
from tests.conftest import FIXTURES
from tests.support.content import edit


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    """The drill topic (three cards) and a second one, `second`, with the same three cards."""
    content = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "modes", content / "drill")
    (content / "second").mkdir()
    shutil.copy(FIXTURES / "modes" / "topic.yaml", content / "second" / "topic.yaml")
    edit(content / "second" / "topic.yaml", "id: drill\n", "id: second\n")
    edit(content / "second" / "topic.yaml", "title: Drill topic\n", "title: Second topic\n")
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
def learner(session: Session, clock) -> int:
    user = User(created_at=clock())
    session.add(user)
    session.commit()
    assert user.id is not None
    return user.id


def keys(entries: list) -> list[str]:
    return [f"{entry.deck}/{entry.item.id}" for entry in entries]


def test_again_comes_back_after_its_step_behind_the_cards_due_before_it(
    session: Session, learner: int, drill: TopicView, clock
) -> None:
    rank, world, _zero = drill.cards
    review.grade(session, learner, modes.card_key(world), Grade.AGAIN, "flashcards", clock())
    clock.advance(120)  # world-size is due now (its one-minute step is over)
    review.grade(session, learner, modes.card_key(rank), Grade.AGAIN, "flashcards", clock())
    deck = modes.deck(session, learner, drill, clock(), new_per_day=10)
    # "Again" does not bring the card back at once: world-size, then the new card, come first.
    assert keys(deck.due) == ["drill/what-is-world-size"]
    assert deck.next is world and keys(deck.new) == ["drill/who-is-rank-zero"]
    assert deck.comes_back == clock() + timedelta(minutes=1)
    clock.advance(60)  # after its step it is due, behind the card due before it
    deck = modes.deck(session, learner, drill, clock(), new_per_day=10)
    assert keys(deck.due) == ["drill/what-is-world-size", "drill/what-is-rank"]


def test_the_daily_queue_takes_due_cards_from_every_topic_then_new_ones_to_the_limit(
    session: Session, learner: int, catalog: Catalog, clock
) -> None:
    second = catalog.topic("second")
    assert second is not None
    review.grade(session, learner, modes.card_key(second.cards[2]), Grade.GOOD, "flashcards",
                 clock())  # fmt: skip
    clock.advance(60)
    drill = catalog.topic("drill")
    assert drill is not None
    review.grade(session, learner, modes.card_key(drill.cards[1]), Grade.GOOD, "flashcards",
                 clock())  # fmt: skip
    clock.advance(3600)  # both are due: the older one first, whatever its topic
    queue = modes.daily_queue(session, learner, catalog, clock(), new_per_day=4)
    assert keys(queue.due) == ["second/who-is-rank-zero", "drill/what-is-world-size"]
    # Two new cards seen today already: two more, in course order, across topics.
    assert keys(queue.new) == ["drill/what-is-rank", "drill/who-is-rank-zero"]
    assert queue.unseen == 4
    # Studying more raises the limit.
    more = modes.daily_queue(session, learner, catalog, clock(), new_per_day=8)
    assert keys(more.new) == [
        "drill/what-is-rank", "drill/who-is-rank-zero", "second/what-is-rank",
        "second/what-is-world-size",
    ]  # fmt: skip
    # One limit: a topic's deck counts the new cards seen today in every topic, as /cards does.
    assert keys(modes.deck(session, learner, drill, clock(), new_per_day=2).new) == []
    assert keys(modes.deck(session, learner, drill, clock(), new_per_day=3).new) == [
        "drill/what-is-rank"
    ]


def test_a_topic_deck_and_the_daily_queue_count_one_new_card_limit(
    session: Session, learner: int, catalog: Catalog, clock
) -> None:
    second = catalog.topic("second")
    drill = catalog.topic("drill")
    assert second is not None and drill is not None
    for card in second.cards[:2]:
        review.grade(session, learner, modes.card_key(card), Grade.GOOD, "flashcards", clock())
    queue = modes.daily_queue(session, learner, catalog, clock(), new_per_day=3)
    deck = modes.deck(session, learner, drill, clock(), new_per_day=3)
    assert len(queue.new) == len(deck.new) == 1


def test_learning_cards_due_within_twenty_minutes_come_when_nothing_else_is_left(
    session: Session, learner: int, drill: TopicView, clock
) -> None:
    for card in drill.cards:
        review.grade(session, learner, modes.card_key(card), Grade.HARD, "flashcards", clock())
    deck = modes.deck(session, learner, drill, clock(), new_per_day=10)
    # Hard's first step is 5.5 minutes: within the learn-ahead limit, so no "come back later".
    assert keys(deck.due) == keys(list(drill.cards)) and deck.next is not None
    for card in drill.cards:
        review.grade(session, learner, modes.card_key(card), Grade.EASY, "flashcards", clock())
    done = modes.deck(session, learner, drill, clock(), new_per_day=10)
    assert done.next is None and done.comes_back is not None
    assert done.comes_back > clock() + modes.CARDS_LEARN_AHEAD


def test_the_new_card_limit_counts_the_learners_day_in_their_zone(
    session: Session, learner: int, drill: TopicView, clock
) -> None:
    los_angeles = ZoneInfo("America/Los_Angeles")
    evening = datetime(2026, 11, 28, 20, 0, tzinfo=los_angeles).astimezone(UTC)  # Sunday in UTC
    review.grade(session, learner, modes.card_key(drill.cards[0]), Grade.EASY, "flashcards",
                 evening)  # fmt: skip
    later = evening + timedelta(hours=3)  # 23:00 in Los Angeles: the same day there
    assert len(modes.deck(session, learner, drill, later, 1, los_angeles).new) == 0
    next_morning = evening + timedelta(hours=12)
    assert len(modes.deck(session, learner, drill, next_morning, 1, los_angeles).new) == 1


def test_an_undone_card_is_shown_first(
    session: Session, learner: int, drill: TopicView, clock
) -> None:
    deck = modes.deck(session, learner, drill, clock(), new_per_day=10)
    assert deck.first("drill/who-is-rank-zero").next is drill.cards[2]
    assert deck.first("drill/no-such-card").next is drill.cards[0]

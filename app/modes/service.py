"""The untimed modes' records: answers in practice, quick quizzes, explain-it and review, and
what a topic page says of each mode. Every answered item also feeds the learner's review queue
(a miss enters it as Again; see app.review.service.record_item_outcome).

Services commit; every write starts a writer transaction (app.db.begin_write) first.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo

from sqlalchemy import func, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.attempts import sightings
from app.challenges.catalog import Catalog, Entry, TopicView
from app.db import begin_write
from app.errors import Conflict, NotFound
from app.modes import rules
from app.modes.models import ModeAnswer, Quiz
from app.review import service as review
from app.review.models import CardSource, ReviewCard

QUIZ_MAX = 10  # a quiz asks up to this many (5-10 when the topic has enough)
# A card due within this much of now counts as due: FSRS's first learning step is one minute,
# so a miss ("Again") is in the queue at once and comes back within the same session.
LEARN_AHEAD = timedelta(minutes=1)
# When nothing else is left, flashcards due within this much come now rather than after a wait
# (Anki's "learn ahead limit", 20 minutes by default): a "Again" or "Hard" card is studied
# at the end of the session instead of leaving the learner at "come back in 1 minute".
CARDS_LEARN_AHEAD = timedelta(minutes=20)


def card_key(entry: Entry) -> review.CardKey:
    """The review card an item or flashcard is scheduled under."""
    source = CardSource.FLASHCARD if entry.is_card else CardSource.ITEM
    return review.CardKey(source, entry.topic, entry.deck, entry.item.id)


def feed_review(
    session: Session,
    user_id: int,
    entry: Entry,
    correct: bool,
    hinted: bool,
    mode: str,
    now: datetime,
) -> None:
    """Feed an answered item to the review queue, and commit."""
    begin_write(session)
    review.record_item_outcome(session, user_id, card_key(entry), correct, hinted, mode, now)
    session.commit()


def record_answer(
    session: Session,
    user_id: int,
    entry: Entry,
    mode: str,
    answer: str,
    correct: bool,
    now: datetime,
    hinted: bool = False,
    points: int | None = None,
    variant_key: str | None = None,
) -> ModeAnswer:
    """Keep an answer given in practice, explain-it or review, feed the review queue, commit.
    `variant_key`: the variant answered, whose sighting is recorded (the first counts)."""
    begin_write(session)
    if variant_key is not None:
        connection = session.connection()
        item_id = entry.item.id
        sightings.record(connection, user_id, entry.deck, item_id, variant_key, mode, now)
    row = ModeAnswer(
        user_id=user_id,
        mode=mode,
        topic=entry.topic,
        deck_id=entry.deck,
        item_id=entry.item.id,
        answer=answer,
        correct=correct,
        hinted=hinted,
        points=points,
        answered_at=now,
    )
    session.add(row)
    session.flush()
    review.record_item_outcome(session, user_id, card_key(entry), correct, hinted, mode, now)
    session.commit()
    return row


def last_answered(session: Session, user_id: int, entry: Entry, mode: str) -> datetime | None:
    """When the learner last answered this item in this mode, if ever."""
    query = select(func.max(ModeAnswer.answered_at)).where(
        ModeAnswer.user_id == user_id,
        ModeAnswer.mode == mode,
        ModeAnswer.deck_id == entry.deck,
        ModeAnswer.item_id == entry.item.id,
    )
    found: datetime | None = session.exec(query).first()
    return found


def right_in_practice(session: Session, user_id: int, topic_id: str) -> set[tuple[str, str]]:
    """(deck, item) of every item the learner has answered right in practice."""
    query = select(ModeAnswer.deck_id, ModeAnswer.item_id).where(
        ModeAnswer.user_id == user_id,
        ModeAnswer.topic == topic_id,
        ModeAnswer.mode == "practice",
        col(ModeAnswer.correct).is_(True),
    )
    return {(deck, item) for deck, item in session.exec(query.distinct())}


def last_answer(session: Session, user_id: int, entry: Entry, mode: str) -> ModeAnswer | None:
    """The learner's latest answer to this item in this mode."""
    query = select(ModeAnswer).where(
        ModeAnswer.user_id == user_id,
        ModeAnswer.mode == mode,
        ModeAnswer.deck_id == entry.deck,
        ModeAnswer.item_id == entry.item.id,
    )
    return session.exec(query.order_by(col(ModeAnswer.id).desc()).limit(1)).first()


def explain_best(session: Session, user_id: int, topic_id: str) -> dict[str, int]:
    """The most concepts the learner has covered, per explain-it item of the topic."""
    query = (
        select(ModeAnswer.item_id, func.max(ModeAnswer.points))
        .where(
            ModeAnswer.user_id == user_id,
            ModeAnswer.topic == topic_id,
            ModeAnswer.mode == "explain",
        )
        .group_by(ModeAnswer.item_id)
    )
    return {item: int(best or 0) for item, best in session.exec(query)}


# Quick quizzes -------------------------------------------------------------------------------


def start_quiz(
    session: Session,
    user_id: int,
    topic: TopicView,
    now: datetime,
    rng: random.Random,
    deck_versions: Mapping[str, str | None] | None = None,
) -> Quiz:
    """Draw 5-10 questions from the topic's items and cards (all of them if fewer), never two
    asking the same fact; commit. Each keeps its deck's version (content hash, from
    `deck_versions`): a Reload meanwhile changes no question of a quiz under way."""
    pool = [*topic.practice, *topic.cards]
    if not pool:
        raise NotFound(f"The topic {topic.title!r} has nothing to quiz on yet.")
    drawn = rules.draw_quiz(pool, QUIZ_MAX, rng)
    size = len(drawn)
    begin_write(session)
    quiz = Quiz(
        user_id=user_id,
        topic=topic.id,
        questions=json.dumps(
            [[e.deck, e.item.id, (deck_versions or {}).get(e.deck)] for e in drawn]
        ),
        total=size,
        created_at=now,
    )
    session.add(quiz)
    session.commit()
    return quiz


@dataclass
class QuizState:
    """A quiz with its answers by position (0-based)."""

    quiz: Quiz
    questions: list[tuple[str, str]]
    answers: dict[int, ModeAnswer] = field(default_factory=dict)
    versions: list[str | None] = field(default_factory=list)  # each question's deck version

    @property
    def current(self) -> int:
        """The first unanswered position (== len(questions) when finished)."""
        return next((p for p in range(len(self.questions)) if p not in self.answers),
                    len(self.questions))  # fmt: skip


def quiz_for_user(session: Session, quiz_id: int, user_id: int) -> QuizState:
    """The learner's own quiz with its answers; another learner's is a 404."""
    quiz = session.get(Quiz, quiz_id)
    if quiz is None or quiz.user_id != user_id:
        raise NotFound("No such quiz.")
    rows = session.exec(select(ModeAnswer).where(ModeAnswer.quiz_id == quiz_id)).all()
    # [deck, id, version]; a quiz started before versions were kept has [deck, id].
    stored = json.loads(quiz.questions)
    pairs = [(str(one[0]), str(one[1])) for one in stored]
    kept = [one[2] if len(one) > 2 else None for one in stored]
    answers = {row.position: row for row in rows if row.position is not None}
    return QuizState(quiz, pairs, answers, kept)


def answer_quiz(
    session: Session,
    state: QuizState,
    position: int,
    entry: Entry,
    answer: str,
    correct: bool,
    now: datetime,
) -> None:
    """Record the one answer to a quiz question, count it, finish the quiz after the last; a
    second answer to the same question is refused (409), even from two tabs at once."""
    quiz = state.quiz
    assert quiz.id is not None
    begin_write(session)
    session.add(
        ModeAnswer(
            user_id=quiz.user_id,
            mode="quiz",
            topic=entry.topic,
            deck_id=entry.deck,
            item_id=entry.item.id,
            answer=answer,
            correct=correct,
            quiz_id=quiz.id,
            position=position,
            answered_at=now,
        )
    )
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict("This question is already answered.") from None
    answered = session.exec(
        select(func.count()).select_from(ModeAnswer).where(ModeAnswer.quiz_id == quiz.id)
    ).one()
    values: dict[str, object] = {"correct": col(Quiz.correct) + int(correct)}
    if int(answered) >= quiz.total:
        values["finished_at"] = now
    session.execute(update(Quiz).where(col(Quiz.id) == quiz.id).values(**values))
    review.record_item_outcome(session, quiz.user_id, card_key(entry), correct, False, "quiz", now)
    session.commit()
    session.refresh(quiz)


def best_quiz(session: Session, user_id: int, topic_id: str) -> tuple[int, int] | None:
    """The learner's best finished quiz of the topic: (right, out of)."""
    query = (
        select(Quiz.correct, Quiz.total)
        .where(Quiz.user_id == user_id, Quiz.topic == topic_id, col(Quiz.finished_at).is_not(None))
        .order_by(col(Quiz.correct) * 1.0 / col(Quiz.total) * -1, col(Quiz.total).desc())
        .limit(1)
    )
    found = session.exec(query).first()
    return None if found is None else (int(found[0]), int(found[1]))


# Flashcards and review -----------------------------------------------------------------------


@dataclass(frozen=True)
class Deck:
    """Where a learner stands with flashcards now (one topic's, or every topic's)."""

    due: list[Entry]  # most overdue first
    new: list[Entry]  # never seen, within today's new-card limit
    unseen: int  # never seen, whatever the limit
    # When the soonest card not due yet comes back (a card in a learning step after "Again").
    comes_back: datetime | None = None
    pinned: Entry | None = None  # shown first whatever its place (the card of an undone grade)

    @property
    def next(self) -> Entry | None:
        """The card to show now: a due one first, then a new one."""
        if self.pinned is not None:
            return self.pinned
        waiting = self.due or self.new
        return waiting[0] if waiting else None

    def first(self, key: str | None) -> Deck:
        """The deck with the card "<deck>/<id>" shown first, if it is waiting (after an undo)."""
        waiting = (e for e in (*self.due, *self.new) if f"{e.deck}/{e.item.id}" == key)
        picked = next(waiting, None)
        return self if picked is None else replace(self, pinned=picked)


def deck(
    session: Session,
    user_id: int,
    topic: TopicView,
    now: datetime,
    new_per_day: int,
    zone: tzinfo = UTC,
) -> Deck:
    """The topic's due cards and today's new ones, no fact twice: a due card's fact is not
    asked again by another due card, and a new card whose fact the learner already studies
    (under another card) is not new to them. A card in a learning step is not due before its
    step is over: "Again" brings it back after a minute, behind the cards due before it.
    New cards come within the day's one limit, counted over every topic (as /cards counts it)."""
    return _deck(session, user_id, topic.cards, now, new_per_day, topic.id, zone)


def daily_queue(
    session: Session,
    user_id: int,
    catalog: Catalog,
    now: datetime,
    new_per_day: int,
    zone: tzinfo = UTC,
) -> Deck:
    """Every topic's flashcards in one queue: the due ones, most overdue first, then new ones
    in course order up to the day's new-card limit (counted over every deck)."""
    cards = [entry for topic in catalog.topics() for entry in topic.cards]
    return _deck(session, user_id, cards, now, new_per_day, None, zone)


def _deck(
    session: Session,
    user_id: int,
    cards: Sequence[Entry],
    now: datetime,
    new_per_day: int,
    topic_id: str | None,
    zone: tzinfo,
) -> Deck:
    by_key = {(entry.deck, entry.item.id): entry for entry in cards}
    midnight = _midnight(now, zone)
    today = review.reviewed_since(session, user_id, CardSource.FLASHCARD, midnight, topic_id)
    asked = _facts_asked(by_key.get((row.deck_id, row.card_id)) for row in today)
    due_rows = review.due_cards(session, user_id, now, CardSource.FLASHCARD, topic_id, 1000)
    due = rules.one_per_fact(
        rules.not_asked_elsewhere(
            (by_key[key] for row in due_rows if (key := (row.deck_id, row.card_id)) in by_key),
            asked,
        )
    )
    known = review.known_card_keys(session, user_id, CardSource.FLASHCARD, topic_id)
    studied = (rules.fact_of(by_key[key]) for key in known if key in by_key)
    unseen = rules.one_per_fact(
        (entry for entry in cards if (entry.deck, entry.item.id) not in known),
        asked=[fact for fact in studied if fact is not None],
    )
    # One limit: new cards first seen since the learner's midnight in any topic.
    left = max(0, new_per_day - review.new_cards_since(session, user_id, midnight))
    new = unseen[:left]
    until = now
    if not due and not new:  # learn ahead, as Anki does when nothing else is left
        until = now + CARDS_LEARN_AHEAD
        ahead = review.due_cards(session, user_id, until, CardSource.FLASHCARD, topic_id, 1000)
        due = rules.one_per_fact(
            rules.not_asked_elsewhere(
                (by_key[key] for row in ahead if (key := (row.deck_id, row.card_id)) in by_key),
                asked,
            )
        )
    later = review.next_due(session, user_id, until, CardSource.FLASHCARD, topic_id)
    return Deck(due, new, len(unseen), later.due if later else None)


def card_of(session: Session, user_id: int, entry: Entry) -> ReviewCard | None:
    """The learner's review card for an item or flashcard, if they have one."""
    key = card_key(entry)
    query = select(ReviewCard).where(
        ReviewCard.user_id == user_id,
        ReviewCard.source == key.source,
        ReviewCard.deck_id == key.deck_id,
        ReviewCard.card_id == key.card_id,
    )
    return session.exec(query).first()


def review_queue(
    session: Session,
    user_id: int,
    now: datetime,
    catalog: Catalog,
    limit: int = 200,
    zone: tzinfo = UTC,
) -> list[Entry]:
    """The learner's missed items due for review, across topics, most overdue first (items no
    longer served are left out), each fact once: its most overdue item, and none whose fact
    was asked since the start of the learner's day in their zone."""
    return review_due(session, user_id, now, catalog, limit, zone)[0]


def review_due(
    session: Session,
    user_id: int,
    now: datetime,
    catalog: Catalog,
    limit: int = 200,
    zone: tzinfo = UTC,
) -> tuple[list[Entry], int]:
    """As review_queue(), and how many due cards were left out because their item, set or
    topic is no longer in the course (the Review page says so rather than hide them)."""
    rows = review.due_cards(session, user_id, now + LEARN_AHEAD, CardSource.ITEM, limit=limit)
    found = [catalog.entry(row.deck_id, row.card_id) for row in rows]
    # "Asked today" is the learner's day, as for flashcards: not the UTC day (issue 37).
    today = review.reviewed_since(session, user_id, CardSource.ITEM, _midnight(now, zone))
    asked = _facts_asked(catalog.entry(row.deck_id, row.card_id) for row in today)
    due = [entry for entry in found if entry is not None]
    return rules.one_per_fact(rules.not_asked_elsewhere(due, asked)), len(found) - len(due)


def _midnight(now: datetime, zone: tzinfo) -> datetime:
    """The start of the learner's day in their zone, as an instant (UTC)."""
    return rules.start_of_day(now, zone)


def _facts_asked(entries: Iterable[Entry | None]) -> dict[str, set[tuple[str, str]]]:
    """fact -> the (deck, id) of each of these entries that asks it."""
    asked: dict[str, set[tuple[str, str]]] = {}
    for entry in entries:
        if entry is not None and entry.item.fact is not None:
            asked.setdefault(entry.item.fact, set()).add((entry.deck, entry.item.id))
    return asked


@dataclass(frozen=True)
class TopicProgress:
    """What the topic page says of each mode, read in a few queries."""

    sets: dict[str, object]  # set id -> SetStanding
    practice_right: int
    deck: Deck | None
    review_due: int
    quiz_best: tuple[int, int] | None
    explain_best: dict[str, int]


def topic_progress(
    session: Session,
    user_id: int,
    topic: TopicView,
    now: datetime,
    new_per_day: int,
    standings: Mapping[str, object],
    catalog: Catalog,
    zone: tzinfo = UTC,
) -> TopicProgress:
    """Read the learner's standing in every mode of one topic."""
    right = right_in_practice(session, user_id, topic.id)
    # The Review page's own queue, so the topic page counts what that page will ask (issue 37).
    queue, _gone = review_due(session, user_id, now, catalog, zone=zone)
    due_items = sum(entry.topic == topic.id for entry in queue)
    return TopicProgress(
        sets={
            facts.set.id: standings[facts.set.id]
            for facts in topic.sets
            if facts.set.id in standings
        },
        practice_right=sum((e.deck, e.item.id) in right for e in topic.practice),
        deck=deck(session, user_id, topic, now, new_per_day, zone) if topic.cards else None,
        review_due=due_items,
        quiz_best=best_quiz(session, user_id, topic.id),
        explain_best=explain_best(session, user_id, topic.id),
    )


def entries_of(
    catalog: Catalog,
    pairs: Sequence[tuple[str, str]],
    versions: Sequence[str | None] = (),
) -> list[Entry | None]:
    """Look up (deck, id) pairs, each of its deck's version when one is given; None for what
    is no longer served."""
    kept = [*versions, *([None] * (len(pairs) - len(versions)))]
    return [
        catalog.entry_kept(deck_id, item_id, version)
        for (deck_id, item_id), version in zip(pairs, kept, strict=True)
    ]

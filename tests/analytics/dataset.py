"""The fixture dataset: six learners take the three-question set through the real services.

Five finish it; the sixth stops after one question, so that every statistic can prove it counts
finished attempts only. The numbers this produces are worked out by hand in test_rules.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import Session

from app.accounts.models import Role, User
from app.attempts import service as attempts
from app.challenges.loader import load_path
from app.challenges.schema import ChallengeSet
from app.db import make_engine
from tests.conftest import FakeClock

FIXTURES = Path(__file__).parent / "fixtures"
SET_ID = "test-analysis"
GRACE_S = 3.0
DAY_ONE = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
DAY_THREE = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)  # nothing happens on the 23rd


@dataclass(frozen=True)
class Question:
    """What a learner does on a question: answers at given seconds, or waits for the time-out."""

    answers: list[tuple[float, list[str]]] = field(default_factory=list)
    hint: bool = False
    timeout_at: float | None = None  # seconds after opening when the page next asks


@dataclass(frozen=True)
class Learner:
    """A learner's name, the day they start, and what they do on each question."""

    name: str
    day: datetime
    questions: list[Question]


# Scores (1 = correct):        q1 q2 q3  total
LEARNERS = [
    Learner(  # ada                  1  1  1   3  (badge)
        "ada",
        DAY_ONE,
        [
            Question([(10, ["A"])], hint=True),
            Question([(20, ["A", "C"])]),
            Question([(10, ["4"])]),
        ],
    ),
    Learner(  # bob                  1  1  0   2
        "bob",
        DAY_ONE,
        [
            Question([(20, ["A"])]),
            Question([(15, ["B"]), (30, ["A", "C"])], hint=True),
            Question(timeout_at=40),
        ],
    ),
    Learner(  # cy                   1  0  1   2
        "cy",
        DAY_ONE,
        [
            Question([(30, ["A"])]),
            Question([(20, ["A"]), (40, ["A", "B"])]),
            Question([(20, ["4"])]),
        ],
    ),
    Learner(  # dee                  0  1  0   1
        "dee",
        DAY_THREE,
        [
            Question([(40, ["B"])], hint=True),
            Question([(10, ["A", "C"])]),
            Question([(20, ["5"])]),
        ],
    ),
    Learner(  # eve                  1  0  0   1
        "eve",
        DAY_THREE,
        [
            Question([(50, ["A"])]),
            Question(timeout_at=70),
            Question(timeout_at=100),
        ],
    ),
    Learner(  # fay: unfinished, left out of every statistic
        "fay",
        DAY_THREE,
        [Question([(10, ["C"])], hint=True)],
    ),
]


def analysis_set() -> ChallengeSet:
    """Load the fixture set."""
    report = load_path(FIXTURES)
    assert not report.errors, report.errors
    return next(loaded.challenge_set for loaded in report.sets if loaded.challenge_set.id == SET_ID)


def take(
    session: Session, user_id: int, challenge_set: ChallengeSet, clock: FakeClock, learner: Learner
) -> None:
    """Drive one learner through the set with the fake clock, as the pages would."""
    clock.now = max(clock.now, learner.day)
    attempt = attempts.start_or_resume(session, user_id, challenge_set, clock.now)
    assert attempt.id is not None
    for position, question in enumerate(learner.questions):
        opened = clock.now
        row = attempts.item_at(session, attempt.id, position)
        item = challenge_set.items[position]
        if question.hint:
            attempts.show_hint(session, row, opened + timedelta(seconds=1))
        for seconds, choices in question.answers:
            clock.now = opened + timedelta(seconds=seconds)
            attempts.submit(session, row, item, choices, GRACE_S, clock.now)
        if question.timeout_at is not None:
            clock.now = opened + timedelta(seconds=question.timeout_at)
        attempts.advance(session, attempt, challenge_set, GRACE_S, clock.now)
    clock.advance(60)  # a minute between learners


def build(database_url: str, clock: FakeClock) -> dict[str, int]:
    """Create the six learners and their attempts; return their user ids by name."""
    challenge_set = analysis_set()
    engine = make_engine(database_url)
    ids: dict[str, int] = {}
    try:
        with Session(engine, expire_on_commit=False) as session:
            for learner in LEARNERS:
                user = User(
                    username=learner.name, is_guest=False, role=Role.LEARNER, created_at=DAY_ONE
                )
                session.add(user)
                session.commit()
                assert user.id is not None
                ids[learner.name] = user.id
                take(session, user.id, challenge_set, clock, learner)
    finally:
        engine.dispose()
    return ids

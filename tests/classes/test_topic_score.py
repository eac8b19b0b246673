"""A topic assignment's score through the service, on a topic with every scored part: its
lesson, its lab's steps (each under the late rule for when it passed) and its two timed sets."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session

from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.classes import rules, service
from app.db import make_engine
from app.labs.models import LabStepState
from app.lessons.models import CHECK, LessonProgress
from tests.conftest import FIXTURES, TEST_CHALLENGES

OPENS = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)
DUE = OPENS + timedelta(days=5)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    """The test sets and the hello lab (topic Collectives) and a lesson given to that topic."""
    root = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, root)
    shutil.copytree(FIXTURES / "labs" / "hello", root / "hello")
    shutil.copytree(FIXTURES / "lessons", root / "lesson")
    topic = root / "lesson" / "topic.yaml"
    text = topic.read_text().replace("id: lesson-drill", "id: collectives")
    topic.write_text(text.replace("title: Lesson drill", "title: Collectives"))
    return Catalog.load(root)


def test_a_topic_scores_its_lesson_lab_steps_and_sets_each_under_the_late_rule(catalog, sqlite_url):
    topic = catalog.topic("collectives")
    assert topic is not None and topic.loaded_topic is not None and len(topic.labs) == 1
    steps = [step.id for step in topic.labs[0].lab.steps]
    assert len(steps) == 2 and len(topic.sets) == 2
    engine = make_engine(sqlite_url)
    with Session(engine) as session:
        teacher = User(username="teach", is_guest=False, created_at=OPENS)
        ana = User(username="ana", is_guest=False, created_at=OPENS)
        session.add_all([teacher, ana])
        session.commit()
        klass = service.create_class(session, "CS 249", teacher, OPENS)
        klass_id = klass.id
        service.join(session, ana, klass, "code", OPENS)
        window = rules.Window(OPENS, DUE, DUE + timedelta(days=3))
        assignment = service.add_assignment(
            session, klass, "", "Collectives (topic)", window, None, 10.0, "collectives"
        )
        assert ana.id is not None and klass_id is not None
        lesson_done = OPENS + timedelta(days=1)
        session.add(
            LessonProgress(
                user_id=ana.id,
                topic_id="collectives",
                step=CHECK,
                answer="[]",
                correct=True,
                completed_at=lesson_done,
                answered_at=lesson_done,
            )
        )
        late_pass = DUE + timedelta(hours=2)  # one day's penalty: counts 0.9
        session.add(
            LabStepState(
                user_id=ana.id,
                lab_id=topic.labs[0].lab.id,
                step_id=steps[0],
                passed_at=late_pass,
                updated_at=late_pass,
            )
        )
        before = OPENS - timedelta(days=1)  # before the assignment opened: does not count
        session.add(
            LabStepState(
                user_id=ana.id,
                lab_id=topic.labs[0].lab.id,
                step_id=steps[1],
                passed_at=before,
                updated_at=before,
            )
        )
        session.commit()
        standing = service.topic_standing(session, catalog, assignment, ana.id, window)
        assert [(part.name, part.score) for part in standing.parts] == [
            ("Lesson", 100.0),
            ("Labs", 45.0),  # (0.9 + 0) / 2 steps
            *((facts.set.title, 0.0) for facts in topic.sets),
        ]
        assert service.assignment_score(session, assignment, ana, catalog) == 145.0 / 4
        assert rules.topic_submitted_at(standing.parts) is None  # the sets are not done
        with pytest.raises(ValueError, match="needs the catalog"):
            service.assignment_score(session, assignment, ana)
    engine.dispose()

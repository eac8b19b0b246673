"""The course path's rules: a topic's state, and the one next step ("Start here", "Continue")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.progress.rules import (
    NextKind,
    OpenAttempt,
    Step,
    StepKind,
    TopicPath,
    TopicState,
    completion,
    next_step,
    next_topic,
    titles_waited_for,
)

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def topic(topic_id: str, *steps: Step, requires: tuple[str, ...] = ()) -> TopicPath:
    return TopicPath(topic_id, topic_id.title(), steps, requires)


def step(kind: StepKind, topic_id: str = "t", done: bool = False, when: int | None = None) -> Step:
    return Step(kind, f"/{topic_id}/{kind.value}", done, when is not None or done,
                last_active=None if when is None else at(when))  # fmt: skip


def fresh(topic_id: str, requires: tuple[str, ...] = ()) -> TopicPath:
    kinds = (StepKind.LESSON, StepKind.PRACTICE, StepKind.TIMED)
    return topic(topic_id, *(step(k, topic_id) for k in kinds), requires=requires)


def test_a_first_visit_starts_at_the_first_topics_first_step():
    path = [fresh("groups"), fresh("ddp", requires=("groups",))]
    found = next_step(path, None)
    assert found is not None
    assert found.kind is NextKind.START
    assert found.href == "/groups/lesson"


def test_an_open_timed_attempt_comes_before_anything_else():
    path = [
        topic("groups", step(StepKind.LESSON, "groups", when=50), step(StepKind.PRACTICE, "groups"))
    ]
    found = next_step(path, OpenAttempt(7, "Groups basics", "groups"))
    assert found is not None
    assert (found.kind, found.href) == (NextKind.RESUME, "/attempts/7")
    assert "Groups basics" in found.label


def test_continue_is_the_first_step_not_done_even_after_work_on_a_later_one():
    groups = topic(
        "groups",
        step(StepKind.LESSON, "groups", done=True, when=1),
        step(StepKind.PRACTICE, "groups", when=5),
        step(StepKind.FLASHCARDS, "groups", when=9),  # worked on last, not done
    )
    found = next_step([groups, fresh("ddp")], None)
    assert found is not None
    assert (found.kind, found.href) == (NextKind.CONTINUE, "/groups/practice")


def test_a_skipped_earlier_step_stays_next_until_it_is_done():
    groups = topic(
        "groups",
        step(StepKind.LESSON, "groups"),
        step(StepKind.PRACTICE, "groups", done=True, when=5),
        step(StepKind.TIMED, "groups", done=True, when=9),
    )
    found = next_step([groups], None)
    assert found is not None and found.href == "/groups/lesson"


def test_work_in_a_later_topic_does_not_move_the_next_step():
    """Grading one card of a later topic once sent Continue to that topic's flashcards."""
    groups = topic(
        "groups", step(StepKind.LESSON, "groups", done=True, when=1), step(StepKind.QUIZ, "groups")
    )
    later = topic(
        "deadlocks",
        step(StepKind.LESSON, "deadlocks"),
        step(StepKind.FLASHCARDS, "deadlocks", when=30),
    )
    found = next_step([groups, later], None)
    assert found is not None and found.href == "/groups/quiz" and found.topic_id == "groups"


def test_a_finished_topic_leads_to_the_next_topics_first_step_whatever_was_touched_last():
    groups = topic("groups", step(StepKind.LESSON, "groups", done=True, when=50))
    collectives = topic(
        "collectives",
        step(StepKind.LESSON, "collectives"),
        step(StepKind.LAB, "collectives", when=10),
    )
    found = next_step([groups, collectives], None)
    assert found is not None
    assert (found.href, found.label) == ("/collectives/lesson", "Lesson — Collectives")


def test_a_finished_topic_leads_to_the_next_topic_whose_prerequisites_are_done():
    groups = topic("groups", step(StepKind.LESSON, "groups", done=True, when=3))
    sampler = fresh("sampler", requires=("ddp",))  # first in order, but waits for ddp
    ddp = fresh("ddp", requires=("groups",))
    found = next_step([groups, sampler, ddp], None)
    assert found is not None
    assert (found.kind, found.href) == (NextKind.CONTINUE, "/ddp/lesson")


def test_when_no_topic_is_ready_the_first_unfinished_one_is_next():
    path = [fresh("a", requires=("b",)), fresh("b", requires=("a",))]
    found = next_topic(path)
    assert found is not None and found.id == "a"


def test_nothing_is_next_when_every_step_is_done():
    path = [topic("a", step(StepKind.LESSON, "a", done=True, when=1))]
    assert next_step(path, None) is None
    assert completion(path) == (1, 1)


def test_a_topics_state_is_not_started_in_progress_or_done():
    assert fresh("a").state is TopicState.NOT_STARTED
    begun = topic("a", step(StepKind.LESSON, "a", done=True), step(StepKind.QUIZ, "a"))
    assert begun.state is TopicState.IN_PROGRESS
    assert topic("a", step(StepKind.LESSON, "a", done=True)).state is TopicState.DONE


def test_a_topic_waits_only_for_prerequisites_not_done_and_known():
    done = topic("groups", step(StepKind.LESSON, "groups", done=True))
    path = [done, fresh("collectives"), fresh("ddp", requires=("groups", "collectives", "gone"))]
    assert titles_waited_for(path)["ddp"] == ["Collectives"]

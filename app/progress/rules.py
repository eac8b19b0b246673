"""The course path: each topic's steps in teaching order, its state, and the one next step.

A topic teaches, then tests: its lesson, practice, flashcards, a quick quiz, explain-it, its
labs, then the timed set (only the steps it has content for). A step is *done* when the
learner has finished what it asks (docs/learners.md says what that is for each step); a topic
is done when all its steps are. Prerequisites (`requires:`) only make a topic look waiting:
every topic stays open.

Pure: the standard library only (the service reads the rows, the pages render the result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class StepKind(StrEnum):
    """The steps of a topic, in the order a topic teaches them."""

    LESSON = "lesson"
    PRACTICE = "practice"
    FLASHCARDS = "flashcards"
    QUIZ = "quiz"
    EXPLAIN = "explain"
    LAB = "lab"
    TIMED = "timed"

    @property
    def label(self) -> str:
        """The step's name as a learner reads it."""
        return _LABELS[self]


_LABELS = {
    StepKind.LESSON: "Lesson",
    StepKind.PRACTICE: "Practice",
    StepKind.FLASHCARDS: "Flashcards",
    StepKind.QUIZ: "Quick quiz",
    StepKind.EXPLAIN: "Explain it",
    StepKind.LAB: "Lab",
    StepKind.TIMED: "Timed challenge",
}


class TopicState(StrEnum):
    """Where a learner stands with a whole topic."""

    NOT_STARTED = "not started"
    IN_PROGRESS = "in progress"
    DONE = "done"


@dataclass(frozen=True)
class Step:
    """One step of a topic for one learner: where it is, whether it is begun and finished,
    and what the learner has done in it ("7/15 right")."""

    kind: StepKind
    href: str
    done: bool = False
    started: bool = False
    detail: str = ""
    last_active: datetime | None = None  # when the learner last did anything in it


@dataclass(frozen=True)
class TopicPath:
    """A topic on the path: its steps (in teaching order) and what it requires."""

    id: str
    title: str
    steps: tuple[Step, ...]
    requires: tuple[str, ...] = ()

    @property
    def last_active(self) -> datetime | None:
        """When the learner last did anything in this topic."""
        return max((s.last_active for s in self.steps if s.last_active is not None), default=None)

    @property
    def state(self) -> TopicState:
        """Not started, in progress or done."""
        if self.steps and all(step.done for step in self.steps):
            return TopicState.DONE
        if any(s.started or s.done or s.last_active is not None for s in self.steps):
            return TopicState.IN_PROGRESS
        return TopicState.NOT_STARTED

    def first_unfinished(self) -> Step | None:
        """The first step not done, in teaching order (where the learner worked last does not
        matter: the path decides)."""
        return next((step for step in self.steps if not step.done), None)


@dataclass(frozen=True)
class OpenAttempt:
    """A timed set the learner started and has not finished."""

    attempt_id: int
    set_title: str
    topic_id: str | None


class NextKind(StrEnum):
    """Why a step is the next one."""

    START = "start"  # nothing done yet: the path's first step
    RESUME = "resume"  # an open timed attempt
    CONTINUE = "continue"  # the first step not done on the path


@dataclass(frozen=True)
class NextStep:
    """The one thing to do next, with the words and the link that offer it."""

    kind: NextKind
    href: str
    label: str  # "Resume DDP basics", "Practice — Collectives on gloo"
    topic_id: str | None


def waiting_for(topic: TopicPath, by_id: Mapping[str, TopicPath]) -> list[TopicPath]:
    """The topics `topic` requires that are not done yet (unknown ids are left out)."""
    return [
        by_id[required]
        for required in topic.requires
        if required in by_id and by_id[required].state is not TopicState.DONE
    ]


def titles_waited_for(path: Sequence[TopicPath]) -> dict[str, list[str]]:
    """For each topic, the titles of the topics it requires that are not done yet."""
    by_id = {topic.id: topic for topic in path}
    return {topic.id: [w.title for w in waiting_for(topic, by_id)] for topic in path}


def next_topic(path: Sequence[TopicPath]) -> TopicPath | None:
    """The first topic not done whose prerequisites are done, else the first not done."""
    by_id = {topic.id: topic for topic in path}
    open_topics = [topic for topic in path if topic.state is not TopicState.DONE]
    ready = (topic for topic in open_topics if not waiting_for(topic, by_id))
    return next(ready, open_topics[0] if open_topics else None)


def next_step(path: Sequence[TopicPath], open_attempt: OpenAttempt | None) -> NextStep | None:
    """The one next thing, shown alike on every page that offers one (home, progress, results,
    a finished lab, a finished lesson): the open timed attempt to resume; else the first step
    not done of the next topic on the path (START for a learner who has done nothing). Activity
    elsewhere on the path never moves it: only finishing it does. None: all done."""
    if open_attempt is not None:
        href = f"/attempts/{open_attempt.attempt_id}"
        label = f"Resume {open_attempt.set_title}"
        return NextStep(NextKind.RESUME, href, label, open_attempt.topic_id)
    following = next_topic(path)
    step = following.first_unfinished() if following is not None else None
    if following is None or step is None:
        return None
    begun = any(topic.state is not TopicState.NOT_STARTED for topic in path)
    kind = NextKind.CONTINUE if begun else NextKind.START
    return NextStep(kind, step.href, f"{step.kind.label} — {following.title}", following.id)


def completion(path: Sequence[TopicPath]) -> tuple[int, int]:
    """(steps done, steps in all) over the whole course."""
    steps = [step for topic in path for step in topic.steps]
    return sum(step.done for step in steps), len(steps)


def percent(done: int, total: int) -> int:
    """A whole percentage, rounded down (100 only when everything is done)."""
    return 0 if total == 0 else done * 100 // total

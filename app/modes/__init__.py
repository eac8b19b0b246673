"""The learning modes of a topic, registered in one place.

Each mode is a `Mode`: its name, how the topic page presents it, where it lives, whether a
topic offers it, and the one-line state the picker shows ("3 due", "Best 7/10"). Routes live
in app/modes/routes.py; to add a mode, add its pages there and its `Mode` to `MODES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.challenges.catalog import TopicView
from app.modes.service import TopicProgress


@dataclass(frozen=True)
class Mode:
    """One way to learn a topic, as the topic page's picker shows it."""

    name: str
    title: str
    icon: str  # a name of app.challenges.icons.NAMES, drawn inline (app.icons)
    blurb: str
    path: str  # with {topic} for the topic's id
    offered: Callable[[TopicView], bool]
    state: Callable[[TopicView, TopicProgress | None], str | None]

    def href(self, topic: TopicView) -> str:
        """The mode's page for this topic."""
        return self.path.format(topic=topic.id)


def _timed_state(topic: TopicView, progress: TopicProgress | None) -> str | None:
    if progress is None or not progress.sets:
        return f"{len(topic.sets)} set{'s' if len(topic.sets) != 1 else ''}"
    standings = progress.sets.values()
    badges = sum(bool(getattr(s, "badge", False)) for s in standings)
    if badges:
        return f"{badges} badge{'s' if badges > 1 else ''} earned"
    best = max(getattr(s, "best_correct", 0) for s in standings)
    return f"Best {best} right"


def _practice_state(topic: TopicView, progress: TopicProgress | None) -> str | None:
    done = progress.practice_right if progress else 0
    return f"{done}/{len(topic.practice)} answered right"


def _flashcard_state(topic: TopicView, progress: TopicProgress | None) -> str | None:
    if progress is None or progress.deck is None:
        return f"{len(topic.cards)} cards"
    deck = progress.deck
    return f"{len(deck.due)} due · {len(deck.new)} new today"


def _review_state(topic: TopicView, progress: TopicProgress | None) -> str | None:
    due = progress.review_due if progress else 0
    return f"{due} due" if due else "Nothing due"


def _quiz_state(topic: TopicView, progress: TopicProgress | None) -> str | None:
    if progress is None or progress.quiz_best is None:
        return "Not taken yet"
    right, total = progress.quiz_best
    return f"Best {right}/{total}"


def _explain_state(topic: TopicView, progress: TopicProgress | None) -> str | None:
    if progress is None or not progress.explain_best:
        return f"{len(topic.explain)} to explain"
    covered = []
    for entry in topic.explain:
        best = progress.explain_best.get(entry.item.id)
        if best is not None:
            covered.append(f"{best}/{len(getattr(entry.item, 'concepts', []))}")
    return "Best " + ", ".join(covered) + " concepts"


MODES: tuple[Mode, ...] = (
    Mode("timed", "Timed challenge", "timer", "Beat the clock; a perfect set earns its badge.",
         "/topics/{topic}#sets", lambda t: bool(t.sets), _timed_state),
    Mode("practice", "Practice", "target", "The same questions, untimed: try as often as you like.",
         "/topics/{topic}/practice", lambda t: bool(t.practice), _practice_state),
    Mode("flashcards", "Flashcards", "layers", "Recall, flip, grade yourself (spaced repetition).",
         "/topics/{topic}/flashcards", lambda t: bool(t.cards), _flashcard_state),
    Mode("review", "Review mistakes", "repeat",
         "What you missed, in any mode, comes back when due.",
         "/review?topic={topic}", lambda t: bool(t.practice), _review_state),
    Mode("quiz", "Quick quiz", "zap", "5–10 untimed questions and cards; a score at the end.",
         "/topics/{topic}/quiz", lambda t: bool(t.practice or t.cards), _quiz_state),
    Mode("explain", "Explain it", "pen-line",
         "Explain in your own words; see which concepts you covered.",
         "/topics/{topic}/explain", lambda t: bool(t.explain), _explain_state),
    Mode("lab", "Lab", "flask-conical", "Edit code and run it across real ranks, step by step.",
         "/topics/{topic}/labs", lambda t: bool(t.labs),
         lambda t, p: f"{len(t.labs)} lab{'s' if len(t.labs) != 1 else ''}"),
    Mode("cheatsheet", "Cheat sheet", "file-text", "The topic on one printable page.",
         "/topics/{topic}/cheatsheet", lambda t: t.cheat_sheet is not None,
         lambda t, p: "One page, printable"),
)  # fmt: skip

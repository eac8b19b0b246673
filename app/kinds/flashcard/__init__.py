"""flashcard: a front/back card of a topic, recalled and graded by the learner.

Cards live in a topic's `cards:` list (never in a timed set). In flashcard and review sessions
the learner grades them Again/Hard/Good/Easy (FSRS); in a quick quiz a card is answered
"I knew it" or "I didn't", which is its answer here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from app.challenges.base import Category, Difficulty, ItemBase
from app.kinds.spec import Kind

KNEW, MISSED = "knew", "missed"
TITLE_LENGTH = 80


def title_from_front(front: str) -> str:
    """A card's default title: the front's first line as written (a heading's `#` dropped),
    its inline Markdown kept whole for the title renderer, so `code` stays code; a long line
    is cut with an ellipsis, closing a code span the cut left open."""
    first = next((line for line in front.splitlines() if line.strip()), "")
    title = first.strip().lstrip("#").strip()
    if len(title) > TITLE_LENGTH:
        title = title[: TITLE_LENGTH - 3].rstrip()
        title += "`…" if title.count("`") % 2 else "…"
    return title or "Card"


class FlashcardItem(ItemBase):
    """A card: a question or cue on the front, the answer on the back (Markdown and code)."""

    kind: Literal["flashcard"] = Field(default="flashcard", description="flashcard")
    category: Category = Field(default=Category.CONCEPTUAL, description="What the card exercises.")
    difficulty: Difficulty = Field(
        default=Difficulty.BEGINNER, description="beginner, intermediate, advanced or expert."
    )
    title: str = Field(
        default="", description="A short heading; by default the front's first line."
    )
    prompt: str = Field(
        min_length=1, validation_alias="front", description="The front: what to recall (Markdown)."
    )
    explanation: str = Field(
        min_length=1, validation_alias="back", description="The back: the answer (Markdown)."
    )

    @model_validator(mode="before")
    @classmethod
    def _title_from_front(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("title") and isinstance(data.get("front"), str):
            data = {**data, "title": title_from_front(data["front"])}
        return data

    @property
    def title_in_front(self) -> bool:
        """Whether the title only repeats the front's first line (shown once, as the front)."""
        return self.title == title_from_front(self.prompt)

    @property
    def front(self) -> str:
        """The front of the card."""
        return self.prompt

    @property
    def back(self) -> str:
        """The back of the card."""
        return self.explanation


def parse_answer(item: FlashcardItem, values: Sequence[str], seed: str | None = None) -> str | None:
    """ "knew" or "missed", the learner's own verdict once the back is shown."""
    return values[0] if len(values) == 1 and values[0] in (KNEW, MISSED) else None


def is_correct(item: FlashcardItem, answer: str) -> bool:
    """The learner knew it."""
    return answer == KNEW


def view(
    item: FlashcardItem, last_answer: str | None, closed: bool, seed: str | None = None
) -> dict[str, object]:
    """The front always (as the prompt); the back is the explanation, shown once closed, and
    also here so that the widget can flip the card before the learner judges themself."""
    return {"back": item.explanation, "title_in_front": item.title_in_front}


KIND = Kind(
    name="flashcard",
    title="Flashcard",
    model=FlashcardItem,
    parse_answer=parse_answer,
    is_correct=is_correct,
    view=view,
    answer_labels=lambda item: (KNEW, MISSED),
    in_sets=False,
    is_card=True,
)

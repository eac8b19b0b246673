"""What a kind of item is: its schema, how an answer is read and judged, what a page shows of it
and how analytics lists its answers. Pure: the standard library and pydantic only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.challenges.base import ItemBase


def _no_labels(item: Any) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Kind:
    """One kind of item, registered in app/kinds/__init__.py.

    A kind lives in one folder, app/kinds/<name>/: __init__.py defines the pydantic model (with
    `kind: Literal["<name>"]`) and this spec; answer.html is the partial that renders the answer
    widget (inputs named `choice`) and, once the item is closed, the key.
    """

    name: str
    title: str  # for people: "Multiple choice"
    model: type[ItemBase]
    # What the learner sent (every `choice` value) normalised to the stored answer, or None if
    # it is not a valid answer (a 4xx, never a wrong answer): (item, values, the order seed of
    # the showing that was answered, so that its option tokens can be read; app.kinds.order).
    parse_answer: Callable[[Any, Sequence[str], str | None], str | None]
    is_correct: Callable[[Any, str], bool]
    # The kind's own fields of the public view of a question: (item, last answer, closed, the
    # showing's order seed, app.kinds.order). The key and what reveals it appear only when closed.
    view: Callable[[Any, str | None, bool, str | None], dict[str, object]]
    # For analytics: the labels answers are counted under, in order (option letters), or () to
    # count each distinct answer as given.
    answer_labels: Callable[[Any], tuple[str, ...]] = _no_labels
    executable: bool = False  # its code runs on the executor, and verify proves its key
    in_sets: bool = True  # may appear in a timed challenge set (else only in a topic's file)
    is_card: bool = False  # a topic's flashcard (its `cards:` list), not one of its `items:`

    @property
    def partial(self) -> str:
        """The template of the answer widget."""
        return f"kinds/{self.name}/answer.html"

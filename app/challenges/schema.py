"""The challenge-set schema: the single source for validation and the editors' JSON Schema.

Items are of the kinds registered in app/kinds; the shared parts are in app.challenges.base.
Pure: imports only the standard library and pydantic (enforced by an import-linter contract).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from app.challenges.base import (
    DEFAULT_ATTEMPTS,
    DEFAULT_TIME_LIMIT_S,
    SLUG,
    Backend,
    Badge,
    Category,
    ChoiceBase,
    Difficulty,
    ExecutableMixin,
    InlineProof,
    ItemBase,
    Launch,
    Launcher,
    NamedProof,
    Option,
    Outcome,
    RankExpectation,
    RankOutcome,
    Source,
    Strict,
    parse_time_limit,
)
from app.kinds import EXECUTABLE_KINDS, Item, TopicItem, proven_by_run
from app.kinds.choice import ChoiceItem
from app.kinds.debug import DebugItem
from app.kinds.explain import ConceptSpec, ExplainItem
from app.kinds.flashcard import FlashcardItem
from app.kinds.numeric import NumericItem, PrintedValue
from app.kinds.predict_output import PredictOutputItem

__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_TIME_LIMIT_S",
    "EXECUTABLE_KINDS",
    "SLUG",
    "Backend",
    "Badge",
    "Category",
    "ChallengeSet",
    "ChoiceBase",
    "ChoiceItem",
    "ConceptSpec",
    "DebugItem",
    "Difficulty",
    "ExecutableMixin",
    "ExplainItem",
    "FlashcardItem",
    "InlineProof",
    "Item",
    "ItemBase",
    "Launch",
    "Launcher",
    "NamedProof",
    "NumericItem",
    "Option",
    "Outcome",
    "PredictOutputItem",
    "PrintedValue",
    "RankExpectation",
    "RankOutcome",
    "Source",
    "Strict",
    "Topic",
    "TopicItem",
    "parse_time_limit",
    "proven_by_run",
]


class ChallengeSet(Strict):
    """A timed challenge: a handful of items and a badge for getting them all right."""

    id: str = Field(
        pattern=SLUG, description="Stable id; attempts refer to it, so never change it."
    )
    title: str = Field(min_length=1, description="Shown on the home page.")
    topic: str = Field(
        min_length=1,
        max_length=100,
        description="The topic the set belongs to: the id (or title) of a topic.yaml, e.g. ddp. "
        "A name no topic file has is an error (a typo), unless `own_topic: true`.",
    )
    own_topic: bool = Field(
        default=False,
        description="true: this set starts a topic of its own, named by `topic:`, that no "
        "topic.yaml defines (yet): a topic page with just the sets and labs naming it.",
    )
    description: str = Field(min_length=1, description="One paragraph about the set (Markdown).")
    badge: Badge = Field(description="Earned by answering every item correctly.")
    items: list[Item] = Field(min_length=1, max_length=50, description="The questions, in order.")

    @model_validator(mode="after")
    def _item_ids_unique(self) -> ChallengeSet:
        seen: set[str] = set()
        for item in self.items:
            if item.id in seen:
                raise ValueError(f"item id {item.id!r} is used twice in this set")
            seen.add(item.id)
        return self

    def item(self, item_id: str) -> ItemBase | None:
        """Return the item with this id, if the set has one."""
        return next((item for item in self.items if item.id == item_id), None)


class Topic(Strict):
    """A subject to learn (a topic.yaml): its flashcards, its untimed items (explain-it, quiz
    questions) and its cheat sheet. Its timed sets name it in their `topic:`."""

    id: str = Field(pattern=SLUG, max_length=100, description="Stable id; sets name it.")
    title: str = Field(min_length=1, max_length=100, description="Shown on the home page.")
    summary: str = Field(min_length=1, description="One paragraph about the topic (Markdown).")
    order: int = Field(default=100, description="Topics are listed by order, then title.")
    requires: list[Annotated[str, Field(pattern=SLUG, max_length=100)]] = Field(
        default_factory=list,
        max_length=20,
        description="The ids of the topics to study first (the course path shows this topic "
        "as waiting for them, but never closes it). Every id must be a topic's; no cycles.",
    )
    cards: list[FlashcardItem] = Field(
        default_factory=list, max_length=200, description="Flashcards: `front:` and `back:`."
    )
    items: list[TopicItem] = Field(
        default_factory=list,
        max_length=100,
        description="Untimed items for practice, quick quizzes and explain-it. Executable "
        "items belong in a challenge set, where `ranklab verify` proves them.",
    )
    proofs: list[NamedProof] = Field(
        default_factory=list,
        max_length=200,
        description="Named proofs: a snippet and the outcome it must show, run by `ranklab "
        "verify`; cards, items and cheat-sheet lines name them in `proof:`.",
    )
    cheat_sheet: str | None = Field(
        default=None, description="A one-page summary (Markdown), inline."
    )
    cheat_sheet_file: str | None = Field(
        default=None,
        pattern=r"^[\w./-]+\.md$",
        description="A Markdown file beside topic.yaml holding the cheat sheet.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Topic:
        seen: set[str] = set()
        for entry in [*self.cards, *self.items]:
            if entry.id in seen:
                raise ValueError(f"id {entry.id!r} is used twice in this topic")
            seen.add(entry.id)
        proof_ids = [proof.id for proof in self.proofs]
        twice = sorted({proof_id for proof_id in proof_ids if proof_ids.count(proof_id) > 1})
        if twice:
            raise ValueError(f"proof id(s) {twice} used twice in this topic")
        if self.id in self.requires:
            raise ValueError("a topic cannot require itself")
        if len(set(self.requires)) != len(self.requires):
            raise ValueError("requires names a topic twice")
        if self.cheat_sheet is not None and self.cheat_sheet_file is not None:
            raise ValueError("give at most one of cheat_sheet or cheat_sheet_file")
        ran = [item.id for item in self.items if proven_by_run(item)]
        if ran:
            # A topic's items are never run: a printed answer would go unproven there.
            raise ValueError(
                f"item(s) {ran} have `printed:`: a numeric item proven by a run belongs in a set"
            )
        return self

    def entry(self, entry_id: str) -> ItemBase | None:
        """Return the card or item with this id."""
        return next((e for e in [*self.cards, *self.items] if e.id == entry_id), None)

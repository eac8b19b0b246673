"""The challenge-set schema: the single source for validation and the editors' JSON Schema.

Items are of the kinds registered in app/kinds; the shared parts are in app.challenges.base.
Pure: imports only the standard library and pydantic (enforced by an import-linter contract).
"""

from __future__ import annotations

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
    ItemBase,
    Launch,
    Launcher,
    Option,
    Outcome,
    RankExpectation,
    RankOutcome,
    Strict,
    parse_time_limit,
)
from app.kinds import EXECUTABLE_KINDS, Item
from app.kinds.choice import ChoiceItem
from app.kinds.debug import DebugItem
from app.kinds.numeric import NumericItem
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
    "DebugItem",
    "Difficulty",
    "ExecutableMixin",
    "Item",
    "ItemBase",
    "Launch",
    "Launcher",
    "NumericItem",
    "Option",
    "Outcome",
    "PredictOutputItem",
    "RankExpectation",
    "RankOutcome",
    "Strict",
    "parse_time_limit",
]


class ChallengeSet(Strict):
    """A timed challenge: a handful of items and a badge for getting them all right."""

    id: str = Field(
        pattern=SLUG, description="Stable id; attempts refer to it, so never change it."
    )
    title: str = Field(min_length=1, description="Shown on the home page.")
    topic: str = Field(min_length=1, description="The subject, e.g. DistributedDataParallel.")
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

"""choice: a multiple-choice question, optionally with an illustrative (not executed) snippet."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.challenges.base import ChoiceBase
from app.kinds import choices
from app.kinds.spec import Kind


class ChoiceItem(ChoiceBase):
    """A multiple-choice question, optionally with an illustrative (not executed) snippet."""

    kind: Literal["choice"] = Field(description="choice")
    code: str | None = Field(default=None, description="An optional snippet shown, not run.")


KIND = Kind(
    name="choice",
    title="Multiple choice",
    model=ChoiceItem,
    parse_answer=choices.parse_answer,
    is_correct=choices.is_correct,
    view=choices.view,
    answer_labels=choices.answer_labels,
)

"""choice: a multiple-choice question, optionally with an illustrative (not executed) snippet."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.challenges.base import ChoiceBase
from app.kinds import choices


class ChoiceItem(ChoiceBase):
    """A multiple-choice question, optionally with an illustrative (not executed) snippet."""

    kind: Literal["choice"] = Field(description="choice")
    code: str | None = Field(default=None, description="An optional snippet shown, not run.")


KIND = choices.kind("choice", "Multiple choice", ChoiceItem)

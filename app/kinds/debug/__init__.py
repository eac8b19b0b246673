"""debug: why does this snippet fail or hang? The executor must observe the failure claimed, and
the keyed fix (fixed_code), run by `ranklab verify`, must end cleanly on every rank."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from app.challenges.base import ChoiceBase, ExecutableMixin, Outcome, Parameterised
from app.kinds import choices


class DebugItem(ChoiceBase, ExecutableMixin, Parameterised):
    """Why does this snippet fail or hang? The executor must observe the failure claimed."""

    kind: Literal["debug"] = Field(description="debug")
    failure: Outcome = Field(
        description="The failure the question claims, as the executor sees it."
    )
    fixed_code: str | None = Field(
        default=None,
        description="The snippet with the keyed fix applied: verify runs it and it must end "
        "cleanly on every rank without showing the failure.",
    )
    fixed_code_file: str | None = Field(
        default=None,
        pattern=r"^[\w./-]+\.py$",
        description="A .py file beside the YAML holding the fixed snippet (instead of fixed_code).",
    )

    @model_validator(mode="after")
    def _one_fix(self) -> DebugItem:
        if self.fixed_code is not None and self.fixed_code_file is not None:
            raise ValueError("give at most one of fixed_code or fixed_code_file")
        return self


KIND = choices.kind("debug", "Debug", DebugItem, executable=True)

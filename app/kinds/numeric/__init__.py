"""numeric: a number to type in, e.g. a speed-up, judged with an absolute tolerance."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from app.challenges.base import ItemBase
from app.kinds.spec import Kind


class NumericItem(ItemBase):
    """A number to type in, e.g. a speed-up, judged with a tolerance."""

    kind: Literal["numeric"] = Field(description="numeric")
    code: str | None = Field(default=None, description="An optional snippet shown, not run.")
    answer: float = Field(description="The correct value.")
    tolerance: float = Field(default=0.0, ge=0, description="Absolute tolerance on the answer.")
    unit: str | None = Field(default=None, description="Unit shown beside the input, e.g. x or %.")


def parse_answer(item: NumericItem, values: Sequence[str], seed: str | None = None) -> str | None:
    """One finite number (a decimal comma is accepted), stored as Python writes it."""
    if len(values) != 1:
        return None
    try:
        number = float(values[0].replace(",", "."))
    except ValueError:
        return None
    return None if not math.isfinite(number) else repr(number)


def is_correct(item: NumericItem, answer: str) -> bool:
    """Within the tolerance of the key."""
    return abs(float(answer) - item.answer) <= item.tolerance + 1e-12


def view(
    item: NumericItem, last_answer: str | None, closed: bool, seed: str | None = None
) -> dict[str, object]:
    """The unit always; the key and its tolerance once closed."""
    shown: dict[str, object] = {"unit": item.unit}
    if closed:
        shown["answer"] = item.answer
        shown["tolerance"] = item.tolerance
    return shown


KIND = Kind(
    name="numeric",
    title="Numeric",
    model=NumericItem,
    parse_answer=parse_answer,
    is_correct=is_correct,
    view=view,
)

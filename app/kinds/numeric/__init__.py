"""numeric: a number to type in, e.g. a speed-up, judged with an absolute tolerance.

With `printed:`, the answer is a number the snippet prints: `ranklab verify` runs the snippet
(code or code_file, launched as `launch:` says) and compares the value that rank prints with
the answer, within the tolerance, on every run (app.verification.rules.judge_numeric)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from app.challenges.base import ItemBase, Launch, Launcher, Parameterised, Strict
from app.kinds.spec import Kind


class PrintedValue(Strict):
    """Where a run of the item's snippet prints the answer."""

    rank: int = Field(default=0, ge=0, le=7, description="The rank whose output holds the value.")
    regex: str | None = Field(
        default=None,
        description="A regular expression searched in that rank's stdout; its one group is the "
        "value, e.g. 'sum ([-\\d.e+]+)'. Omitted: the whole output is the number.",
    )

    @field_validator("regex")
    @classmethod
    def _one_group(cls, regex: str | None) -> str | None:
        if regex is None:
            return regex
        try:
            groups = re.compile(regex).groups
        except re.error as error:
            raise ValueError(f"printed.regex is not a regular expression: {error}") from None
        if groups != 1:
            raise ValueError(
                f"printed.regex needs exactly one group, around the number (it has {groups}), "
                "e.g. 'loss ([-\\d.]+)'; write (?:...) for a group that is not the value"
            )
        return regex


class NumericItem(ItemBase, Parameterised):
    """A number to type in, e.g. a speed-up, judged with a tolerance."""

    kind: Literal["numeric"] = Field(description="numeric")
    code: str | None = Field(
        default=None, description="An optional snippet shown (run by verify with `printed:`)."
    )
    code_file: str | None = Field(
        default=None,
        pattern=r"^[\w./-]+\.py$",
        description="A .py file beside the YAML holding the snippet (instead of code).",
    )
    launch: Launch = Field(
        default_factory=Launch, description="How verify launches the snippet (with `printed:`)."
    )
    printed: PrintedValue | None = Field(
        default=None,
        description="The answer is printed by the snippet: verify runs it and compares the "
        "value this rank prints with the answer, within the tolerance.",
    )
    answer: float = Field(description="The correct value.")
    answer_from: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With params: an expression of the parameters giving each variant's "
        'answer, e.g. "sum(VALUES) / nproc"; `answer` is then the answer of the snippet as '
        "its file is written.",
    )
    tolerance: float = Field(default=0.0, ge=0, description="Absolute tolerance on the answer.")
    unit: str | None = Field(default=None, description="Unit shown beside the input, e.g. x or %.")

    @field_validator("launch", mode="before")
    @classmethod
    def _launcher_shorthand(cls, value: object) -> object:
        if isinstance(value, str) and value in {member.value for member in Launcher}:
            return {"launcher": value}
        return value

    @model_validator(mode="after")
    def _runnable(self) -> NumericItem:
        if self.code is not None and self.code_file is not None:
            raise ValueError("give at most one of code or code_file")
        if self.answer_from is not None and not self.params:
            raise ValueError("answer_from needs params: it computes each variant's answer")
        if self.params and self.code is None and self.code_file is None:
            raise ValueError("params need the snippet they are assigned in: code or code_file")
        if self.printed is None:
            return self
        if self.code is None and self.code_file is None:
            raise ValueError("printed: needs the snippet that prints the value: code or code_file")
        ranks = 1 if self.launch.launcher is Launcher.PYTHON else self.launch.nproc
        if self.printed.rank >= ranks:
            raise ValueError(
                f"printed.rank {self.printed.rank} does not exist in a run of {ranks} rank(s) "
                f"(ranks count from 0; launch.nproc is {self.launch.nproc})"
            )
        return self

    @model_serializer(mode="wrap")
    def _omit_unused_snippet_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A numeric item that runs nothing dumps as it did before these fields existed, so its
        # content hash (a lab step's questions are hashed with the step) stays as it was.
        data = handler(self)
        if isinstance(data, dict) and self.printed is None:
            unused = {"printed": True, "code_file": self.code_file is None}
            unused["launch"] = self.launch == Launch()
            for name, drop in unused.items():
                if drop:
                    data.pop(name, None)
        return data


def runs_on_verify(item: ItemBase) -> bool:
    """Whether verify runs this item: a numeric item whose answer its snippet prints."""
    return isinstance(item, NumericItem) and item.printed is not None


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
    """The unit always; the key and its tolerance once closed; numbers as a program prints
    them (`6`, not `6.0`: a whole number's key is read against what a rank printed)."""
    shown: dict[str, object] = {"unit": item.unit}
    if last_answer is not None:
        shown["last_answer"] = printed_form(last_answer)
    if closed:
        shown["answer"] = as_printed(item.answer)
        shown["tolerance"] = as_printed(item.tolerance)
    return shown


def as_printed(number: float) -> float | int:
    """A whole number as an int (Python prints `6`), any other as it is (`1.5`)."""
    return int(number) if float(number).is_integer() else number


def printed_form(answer: str) -> str:
    """A stored answer (Python's repr of a float, `6.0`) as a program prints it (`6`)."""
    try:
        return str(as_printed(float(answer)))
    except (ValueError, OverflowError):
        return answer


KIND = Kind(
    name="numeric",
    title="Numeric",
    model=NumericItem,
    parse_answer=parse_answer,
    is_correct=is_correct,
    view=view,
)

"""Compare what a learner typed with what a rank printed, as a person would. Pure: the
standard library only.

Spacing (runs of spaces and tabs, blank lines at the ends, the final newline) never matters.
Numbers are compared by value, line by line: "201" for a printed "201.0" is the right value in
another form, which counts as right and says how Python writes it. Anything else that differs
(a word, a value, a missing line) is not what the run shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

# A number as Python and torch print them: 3, -3, 3.0, 3., .5, 1e-05, 2.5e+03.
_NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
# A token: a number not glued to a word (rank1 stays a word), a word, or one other character.
_TOKEN = re.compile(rf"(?<![\w.])(?P<number>{_NUMBER})(?![\w.])|\w+|\S")


class Match(Enum):
    """How a typed output compares with the printed one."""

    SAME = "same"  # the same text, spacing aside
    SAME_VALUE = "same_value"  # the same words and values, a number or spacing in another form
    DIFFERENT = "different"


@dataclass(frozen=True)
class Verdict:
    """The comparison's result: whether it counts as right, and a hint when the form differs."""

    match: Match
    hint: str | None = None

    @property
    def right(self) -> bool:
        """The same output, or the same values in another form."""
        return self.match is not Match.DIFFERENT


def lines(text: str) -> list[str]:
    """The text's lines as compared: runs of whitespace made one space, the ends of each line
    and blank lines at the start and end dropped."""
    kept = [" ".join(line.split()) for line in text.strip().splitlines()]
    return kept


def _tokens(line: str) -> list[tuple[str, float | None]]:
    """Each token of a line with its value when it is a number."""
    found: list[tuple[str, float | None]] = []
    for match in _TOKEN.finditer(line):
        number = match.group("number")
        found.append((match.group(0), float(number) if number is not None else None))
    return found


def _number_hint(typed: str, printed: str) -> str:
    """Why Python printed the same value another way."""

    def whole(text: str) -> bool:  # written as an integer: no point, no exponent
        return "." not in text and "e" not in text.lower()

    if whole(typed) and "." in printed and "e" not in printed.lower():
        return f"Right value; Python prints floats as {printed}"
    if whole(printed) and not whole(typed):
        return f"Right value; Python prints integers without a decimal point: {printed}"
    return f"Right value; the run prints it as {printed}"


def _line_hint(typed: str, printed: str) -> str | None:
    """None when the lines differ; else the hint (empty when they are the same text)."""
    if typed == printed:
        return ""
    typed_tokens, printed_tokens = _tokens(typed), _tokens(printed)
    if len(typed_tokens) != len(printed_tokens):
        return None
    hint = ""
    for (typed_text, typed_value), (printed_text, printed_value) in zip(
        typed_tokens, printed_tokens, strict=True
    ):
        if typed_value is not None and printed_value is not None:
            if typed_value != printed_value:
                return None
            if typed_text != printed_text and not hint:
                hint = _number_hint(typed_text, printed_text)
        elif typed_text != printed_text:
            return None
    return hint or f"Right values; the run spaces it as: {printed}"


def compare(typed: str, printed: str) -> Verdict:
    """Judge what the learner typed against what the rank printed."""
    typed_lines, printed_lines = lines(typed), lines(printed)
    if typed_lines == printed_lines:
        return Verdict(Match.SAME)
    if len(typed_lines) != len(printed_lines):
        return Verdict(Match.DIFFERENT)
    hints = []
    for typed_line, printed_line in zip(typed_lines, printed_lines, strict=True):
        hint = _line_hint(typed_line, printed_line)
        if hint is None:
            return Verdict(Match.DIFFERENT)
        if hint:
            hints.append(hint)
    return Verdict(Match.SAME_VALUE, hints[0] if hints else None)

"""Read a check's regular expression as the text it asks for, so a learner is told "a line like
`rank <n>: sum of ranks = 3`" and never shown the regex itself.

Check regexes are written to match printed lines: literal text with escapes, `\\d+` for a
number, `.*` for "anything", `\\n` between lines, a `(a|b)` choice. Those read back as text
(a number as `<n>`, anything as `…`, a choice as its first branch); anything cleverer (a
lookahead, a character class, a repeated letter) reads as None, and the caller says what the
check is about without the text. Pure: the standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANYTHING = "…"
NUMBER = "<n>"
WORD = "<word>"

_LITERAL_ESCAPES = set(".[](){}|\\-+*?^$/#&~ '\"=:,<>!@%")
_QUANTIFIERS = ("*?", "+?", "*", "+")
_CLASSES = {"d": (NUMBER, r"\d+"), "w": (WORD, r"\w+"), "s": (" ", r"\s+")}


@dataclass(frozen=True)
class Line:
    """One line the regex asks for: as the learner reads it, and a regex that finds it."""

    text: str
    pattern: str

    def found_in(self, output: str) -> bool:
        """Whether the output shows this line (a `…` inside it may cross lines)."""
        return re.search(self.pattern, output, re.DOTALL) is not None


@dataclass(frozen=True)
class Readable:
    """A regex read as text: its lines, and whether the output may hold other lines too."""

    lines: list[Line]
    contains: bool  # other text may come before or after (a leading or trailing `.*`)


def read(pattern: str) -> Readable | None:
    """The lines a check regex asks for, or None when it cannot be read back as plain text."""
    body = re.sub(r"^\(\?[aimsux]+\)", "", pattern)
    tokens = _tokens(body)
    if tokens is None:
        return None
    contains = bool(tokens) and (tokens[0][0] == ANYTHING or tokens[-1][0] == ANYTHING)
    lines: list[Line] = []
    current: list[tuple[str, str]] = []
    for token in [*tokens, ("\n", "")]:
        if token[0] != "\n":
            current.append(token)
            continue
        while current and not current[0][0].strip(" " + ANYTHING):
            current.pop(0)  # "anything" or spaces at either end add nothing to show
        while current and not current[-1][0].strip(" " + ANYTHING):
            current.pop()
        if current:
            lines.append(Line("".join(t for t, _ in current), "".join(r for _, r in current)))
        current = []
    return Readable(lines, contains) if lines else None


def _tokens(body: str) -> list[tuple[str, str]] | None:
    """(shown text, regex for it) pieces; None on anything that does not read as text."""
    tokens: list[tuple[str, str]] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            escaped = body[index + 1]
            index += 2
            if escaped == "n":
                tokens.append(("\n", ""))
            elif escaped in _CLASSES:
                index = _skip_quantifier(body, index)
                tokens.append(_CLASSES[escaped])
            elif escaped in _LITERAL_ESCAPES:
                tokens.append((escaped, re.escape(escaped)))
            else:
                return None
            continue
        if char == ".":
            index = _skip_quantifier(body, index + 1)
            tokens.append((ANYTHING, ".*?"))
            continue
        if char == "(":
            branch, index = _first_branch(body, index)
            if branch is None:
                return None
            inner = _tokens(branch)
            if inner is None or any(text == "\n" for text, _ in inner):
                return None
            tokens.append(("".join(t for t, _ in inner), ".*?"))
            continue
        if char in "^$":
            index += 1
            continue
        if char in "[]{}|)*+?":
            return None
        if index + 1 < len(body) and body[index + 1] in "*+?{":
            return None  # a repeated or optional letter: no one text to show
        tokens.append((char, re.escape(char)))
        index += 1
    return tokens


def _skip_quantifier(body: str, index: int) -> int:
    for quantifier in _QUANTIFIERS:
        if body.startswith(quantifier, index):
            return index + len(quantifier)
    return index


def _first_branch(body: str, start: int) -> tuple[str | None, int]:
    """The first alternative of the group at `start`, and the index after the group; None for
    a lookaround or an unbalanced group. A quantified group is refused (it may be absent)."""
    inside = start + 1
    if body.startswith("?:", inside):
        inside += 2
    elif body.startswith("?", inside):
        return None, start
    depth, index, bar = 1, inside, None
    while index < len(body):
        char = body[index]
        if char == "\\":
            index += 2
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                break
        elif char == "|" and depth == 1 and bar is None:
            bar = index
        index += 1
    if depth != 0:
        return None, start
    after = index + 1
    if after < len(body) and body[after] in "*+?{":
        return None, start
    return body[inside : bar if bar is not None else index], after

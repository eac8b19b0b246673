"""Cheat-sheet claims and their markers: what each bullet or table row rests on.

Every bullet line (`- `, `* `) and every table body row of a cheat sheet is a claim. It ends with
an HTML comment saying why to believe it: `<!-- proof: ID -->` (a named proof of the topic),
`<!-- source: URL-or-torch-path torch=2.13.0 -->`, or `<!-- nofact -->` for a line that states
no torch behaviour. The comments are for authors and `ranklab content`; learners see the
Markdown with them stripped. Lines inside fenced code blocks are code, not claims.

Pure: the standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

MARKER = re.compile(r"[ \t]*<!--\s*(proof|source|nofact)\b\s*:?\s*(.*?)\s*-->")
_BULLET = re.compile(r"^(\s*)[-*]\s+\S")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SOURCE = re.compile(r"^(?P<where>\S+)(?:\s+torch=(?P<torch>\S+))?$")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?\S*$")


@dataclass(frozen=True)
class Claim:
    """One claim of a cheat sheet: where it starts (1-based), its text and its marker."""

    line: int
    column: int
    text: str
    marker: str | None = None  # "proof", "source", "nofact" or None (unmarked)
    proof: str | None = None  # the named proof's id
    source: str | None = None  # a URL or a torch source path
    torch: str | None = None  # the torch version the source was read at
    marker_line: int = 0
    marker_column: int = 0


@dataclass(frozen=True)
class Problem:
    """A malformed marker, at its 1-based position in the cheat sheet."""

    line: int
    column: int
    message: str


def claims(markdown: str) -> tuple[list[Claim], list[Problem]]:
    """Every claim of a cheat sheet with its marker, and every malformed marker."""
    found: list[Claim] = []
    problems: list[Problem] = []
    lines = markdown.splitlines()
    in_code = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):
            in_code = not in_code
            index += 1
            continue
        bullet = None if in_code else _BULLET.match(line)
        is_row = not in_code and _is_table_body_row(lines, index)
        if not bullet and not is_row:
            index += 1
            continue
        # A bullet's claim runs on over its indented continuation lines; a row is one line.
        end = index + 1
        if bullet:
            indent = len(bullet[1])
            while end < len(lines) and _continues(lines[end], indent):
                end += 1
        claim, problem = _claim(lines, index, end)
        found.append(claim)
        if problem is not None:
            problems.append(problem)
        index = end
    return found, problems


def strip(markdown: str) -> str:
    """The cheat sheet as learners see it: every claim marker removed (a line that held only
    a marker goes too), code blocks left as written."""
    kept: list[str] = []
    in_code = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            in_code = not in_code
        if in_code:
            kept.append(line)
            continue
        stripped = MARKER.sub("", line)
        if stripped.strip() or not line.strip():
            kept.append(stripped)
    return "".join(kept)


def _is_table_body_row(lines: list[str], index: int) -> bool:
    """A `|` line below a table's header rule (the header row itself states no claim)."""
    if not _TABLE_ROW.match(lines[index]) or _TABLE_RULE.match(lines[index]):
        return False
    above = index - 1
    while above >= 0 and _TABLE_ROW.match(lines[above]) and not _TABLE_RULE.match(lines[above]):
        above -= 1
    return above >= 1 and _TABLE_RULE.match(lines[above]) is not None


def _continues(line: str, indent: int) -> bool:
    """Whether a line carries on the bullet above it (indented deeper, not a new bullet)."""
    if not line.strip() or _BULLET.match(line) or _FENCE.match(line):
        return False
    return len(line) - len(line.lstrip()) > indent


def _claim(lines: list[str], start: int, end: int) -> tuple[Claim, Problem | None]:
    """The claim on lines[start:end] and its last marker (a claim ends with its marker)."""
    text = "\n".join(lines[start:end])
    column = len(lines[start]) - len(lines[start].lstrip()) + 1
    markers = [
        (start + offset + 1, match)
        for offset, line in enumerate(lines[start:end])
        for match in MARKER.finditer(line)
    ]
    shown = MARKER.sub("", text).strip()
    if not markers:
        return Claim(start + 1, column, shown), None
    line_number, match = markers[-1]
    kind, argument = match[1], match[2]
    marker_column = match.start() + len(match[0]) - len(match[0].lstrip()) + 1
    claim = Claim(start + 1, column, shown, kind, None, None, None, line_number, marker_column)
    at = (line_number, marker_column)
    if kind == "nofact":
        problem = Problem(*at, "<!-- nofact --> takes nothing after it") if argument else None
        return claim, problem
    if kind == "proof":
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", argument):
            return claim, Problem(*at, f"<!-- proof: ID -->: {argument!r} is not a proof id")
        return replace(claim, proof=argument), None
    parsed = _SOURCE.match(argument)
    if parsed is None or not argument:
        return claim, Problem(*at, "<!-- source: URL-or-path torch=VERSION -->: no source given")
    where, torch = parsed["where"], parsed["torch"]
    claim = replace(claim, source=where, torch=torch)
    if torch is None:
        return claim, Problem(
            *at, f"source {where!r} has no torch version: end it with torch=2.13.0 (the one read)"
        )
    if not _VERSION.match(torch):
        return claim, Problem(*at, f"torch={torch!r} is not a version such as 2.13.0")
    return claim, None

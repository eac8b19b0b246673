"""A challenge file's references, read without loading it: its id, title, topic, required
topics and facts, from its top-level lines.

Loading a file (YAML with positions, the schema, snippets, Markdown) is what makes checking a
whole course take seconds; checking one folder needs only the few other files it refers to or
could collide with (app.challenges.course). This scan finds them. It is deliberately simple
(top-level `key: value` lines and a `requires:` list): what it cannot read it reports as
unknown, and the caller then loads the file (or the whole course) rather than guess.

Pure: the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_TOP = re.compile(r"^(id|title|topic|requires):[ \t]*(.*?)[ \t]*(?:[ \t]#.*)?$", re.MULTILINE)
_FACT = re.compile(r"^[ \t-]*fact:[ \t]*[\"']?([^\"'\s#]+)", re.MULTILINE)
_LIST_ITEM = re.compile(r"^[ \t]*-[ \t]*[\"']?([^\"'\s#]+)")


@dataclass(frozen=True)
class Head:
    """What one file names: None where the scan could not tell."""

    path: Path
    id: str | None
    title: str | None
    topic: str | None
    requires: tuple[str, ...] = ()
    facts: frozenset[str] = field(default_factory=frozenset)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _requires(text: str, value: str, end: int) -> tuple[str, ...]:
    if value.startswith("["):  # requires: [a, b]
        inner = value.strip("[]")
        return tuple(_unquote(one.strip()) for one in inner.split(",") if one.strip())
    found = []  # requires:\n  - a\n  - b
    for line in text[end:].splitlines()[1:]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue  # a blank or comment line inside the list
        match = _LIST_ITEM.match(line)
        if match is None:
            break
        found.append(match[1])
    return tuple(found)


def read(path: Path) -> Head:
    """Scan one file's top-level references (an unreadable file names nothing)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return Head(path, None, None, None)
    values: dict[str, str] = {}
    requires: tuple[str, ...] = ()
    for match in _TOP.finditer(text):
        key, value = match[1], match[2]
        if key in values:
            continue
        values[key] = _unquote(value)
        if key == "requires":
            requires = _requires(text, value, match.end())
    return Head(
        path,
        values.get("id") or None,
        values.get("title") or None,
        values.get("topic") or None,
        requires,
        frozenset(_FACT.findall(text)),
    )

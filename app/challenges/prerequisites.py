"""Check the topics' `requires:` across files: every id names a topic, and no cycle.

One topic file cannot see the others, so the loader runs this once every topic is loaded. An
unknown id suggests the closest topic id; a cycle is reported once, at each topic in it, with the
whole loop (`a -> b -> a`), since any one of its links may be the wrong one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Requirement:
    """One `requires:` entry: the topic naming it, the id named, and where it is written."""

    topic: str
    required: str
    path: str
    line: int
    column: int


@dataclass(frozen=True)
class Problem:
    """A bad `requires:` entry, at its place in its file."""

    path: str
    line: int
    column: int
    message: str


def problems(
    requirements: Sequence[Requirement], known: Sequence[str], unknown_ok: bool = False
) -> list[Problem]:
    """Every unknown topic id (with a did-you-mean; none when `unknown_ok`: a topic file that
    failed to load may hold it) and every cycle among the requirements."""
    found: list[Problem] = []
    for one in requirements:
        if one.required not in known and not unknown_ok:
            close = difflib.get_close_matches(one.required, list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"requires {one.required!r}: no topic has that id{hint}"
            found.append(Problem(one.path, one.line, one.column, message))
    edges: dict[str, list[Requirement]] = {}
    for one in requirements:
        if one.required in known:
            edges.setdefault(one.topic, []).append(one)
    for cycle in _cycles({topic: [r.required for r in out] for topic, out in edges.items()}):
        loop = " -> ".join([*cycle, cycle[0]])
        for topic, following in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
            place = next(r for r in edges[topic] if r.required == following)
            message = f"requires {following!r} makes a cycle: {loop}"
            found.append(Problem(place.path, place.line, place.column, message))
    return found


def _cycles(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Each cycle of the graph once (as found by a depth-first walk, from its first node)."""
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    finished: set[str] = set()

    def walk(node: str, trail: list[str]) -> None:
        if node in trail:
            cycle = trail[trail.index(node) :]
            if frozenset(cycle) not in seen:
                seen.add(frozenset(cycle))
                found.append(cycle)
            return
        if node in finished:
            return
        for following in graph.get(node, ()):
            walk(following, [*trail, node])
        finished.add(node)

    for start in sorted(graph):
        walk(start, [])
    return found

"""What one challenge file may cost to load: its size, nesting depth, aliases and nodes.

ruamel.yaml builds an alias as a shared object, but turning the document into plain data for
pydantic expands every alias: nine levels of ten aliases ("billion laughs") become 10**9 nodes,
gigabytes and minutes. ruamel's composer recurses once per nesting level, so deep nesting
overflows the stack, and a dense 1 MiB file takes it 15-60 s to load. So each parser event is
checked as the composer takes it (`load_within_limits`: nothing expanded yet) and loading
stops at the first node over a limit: a hostile file costs well under a second. An alias inside
its own anchor is refused too (ruamel would load it as a silent null). The shipped sets are
~20 KB, ~400 nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent

MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 50
MAX_ALIASES = 100
MAX_NODES = 20_000  # counted with every alias expanded, as pydantic will see the document


@dataclass(frozen=True)
class Problem:
    """Why a file is refused, at a 1-based position."""

    line: int
    column: int
    message: str


def size_problem(size: int) -> Problem | None:
    """Refuse a file larger than MAX_FILE_BYTES before reading it."""
    if size > MAX_FILE_BYTES:
        return Problem(1, 1, f"file is {size} bytes; the limit is {MAX_FILE_BYTES} bytes")
    return None


@dataclass
class _Open:
    """A collection whose end has not been seen yet."""

    anchor: str | None
    nodes: int = 1


def structure_problem(text: str) -> Problem | None:
    """Return the first node over the depth, alias or node limits, or None if the file is fine.

    Raises ruamel's YAMLError for syntax errors (the loader reports those as it always has).
    """
    walk = _Walk()
    for event in YAML(typ="rt").parse(text):
        problem = walk.see(event)
        if problem is not None:
            return problem
    return None


def load_within_limits(text: str) -> tuple[Any, Problem | None]:
    """Load a document (round-trip), checking each event against the limits as the composer
    takes it: (document, None), or (None, the first problem). One parse instead of two (the
    parse was ~30% of loading the course); the composer stops at the same first node over a
    limit, before anything is expanded or nested any deeper. Raises YAMLError as load does."""
    yaml = YAML(typ="rt")
    walk = _Walk()

    class Checked(yaml.Parser):  # type: ignore[name-defined]
        def get_event(self) -> Any:
            event = super().get_event()
            problem = walk.see(event)
            if problem is not None:
                raise _OverLimit(problem)
            return event

    yaml.Parser = Checked
    try:
        return yaml.load(text), None
    except _OverLimit as over:
        return None, over.problem


class _OverLimit(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _Walk:
    """The limits, checked one parser event at a time (no recursion, nothing expanded)."""

    def __init__(self) -> None:
        self.open_collections: list[_Open] = []
        self.anchored: dict[str, int] = {}  # anchor -> nodes it expands to
        self.aliases = self.nodes = 0

    def see(self, event: Any) -> Problem | None:
        """The problem this event makes, if any."""
        open_collections, mark = self.open_collections, event.start_mark
        if isinstance(event, CollectionStartEvent):
            open_collections.append(_Open(event.anchor))
            if len(open_collections) > MAX_DEPTH:
                return _at(mark, f"nested deeper than {MAX_DEPTH} levels")
            added = 1
        elif isinstance(event, CollectionEndEvent):
            closed = open_collections.pop()
            if closed.anchor is not None:
                self.anchored[closed.anchor] = closed.nodes
            if open_collections:
                open_collections[-1].nodes += closed.nodes
            return None
        elif isinstance(event, AliasEvent):
            self.aliases += 1
            if any(collection.anchor == event.anchor for collection in open_collections):
                return _at(mark, f"alias *{event.anchor} refers to a node that contains it")
            if self.aliases > MAX_ALIASES:
                return _at(mark, f"more than {MAX_ALIASES} aliases")
            added = self.anchored.get(str(event.anchor), 1)  # undefined: the loader reports it
        elif isinstance(event, ScalarEvent):
            if event.anchor is not None:
                self.anchored[event.anchor] = 1
            added = 1
        else:
            return None  # stream and document boundaries
        self.nodes += added
        if open_collections and not isinstance(event, CollectionStartEvent):
            open_collections[-1].nodes += added
        if self.nodes > MAX_NODES:
            if isinstance(event, AliasEvent):
                return _at(mark, f"alias *{event.anchor} expands this file past {MAX_NODES} nodes")
            return _at(mark, f"this file has more than {MAX_NODES} nodes")
        return None


def _at(mark: object, message: str) -> Problem:
    line, column = getattr(mark, "line", 0), getattr(mark, "column", 0)
    return Problem(line + 1, column + 1, message)

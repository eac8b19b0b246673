"""The catalog: the challenge sets being served, and the errors of the files that were skipped.

Everything pages look up per request (the sets in order, each set's facts, an item by its id)
is computed once per load, and a reload swaps it all in at once.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from app.challenges.loader import LoadedSet, LoadError, load_path
from app.challenges.schema import ChallengeSet, ItemBase


@dataclass(frozen=True)
class SetFacts:
    """What the home page and a set's page say about a set."""

    set: ChallengeSet
    question_count: int
    total_seconds: float
    difficulty_mix: dict[str, int]

    @classmethod
    def of(cls, challenge_set: ChallengeSet) -> SetFacts:
        """Count a set's questions, total time and questions per difficulty."""
        items = challenge_set.items
        return cls(
            set=challenge_set,
            question_count=len(items),
            total_seconds=sum(item.time_limit for item in items),
            difficulty_mix=dict(Counter(item.difficulty.value for item in items)),
        )


@dataclass(frozen=True)
class _Contents:
    """One load of the folder, with its lookups precomputed; replaced whole on reload."""

    sets: dict[str, LoadedSet] = field(default_factory=dict)
    errors: list[LoadError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    ordered: tuple[LoadedSet, ...] = ()
    facts: tuple[SetFacts, ...] = ()
    facts_by_id: dict[str, SetFacts] = field(default_factory=dict)
    items: dict[tuple[str, str], ItemBase] = field(default_factory=dict)

    @classmethod
    def of(cls, sets: list[LoadedSet], errors: list[LoadError], files: list[str]) -> _Contents:
        ordered = tuple(sorted(sets, key=lambda loaded: loaded.challenge_set.title))
        facts = tuple(SetFacts.of(loaded.challenge_set) for loaded in ordered)
        return cls(
            sets={loaded.challenge_set.id: loaded for loaded in sets},
            errors=errors,
            files=files,
            ordered=ordered,
            facts=facts,
            facts_by_id={fact.set.id: fact for fact in facts},
            items={
                (loaded.challenge_set.id, item.id): item
                for loaded in sets
                for item in loaded.challenge_set.items
            },
        )


@dataclass
class Catalog:
    """Valid sets by stable id plus the load errors; reloadable without a restart."""

    root: Path
    _contents: _Contents = field(default_factory=_Contents, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, root: Path) -> Catalog:
        """Load every file under root; broken files are reported and skipped."""
        catalog = cls(root=root)
        catalog.reload()
        return catalog

    def reload(self) -> None:
        """Read the folder again and swap in the result at once."""
        with self._lock:  # one reload at a time; readers see the old contents or the new
            report = load_path(self.root, display_root=self.root.parent)
            self._contents = _Contents.of(report.sets, report.errors, report.files)

    @property
    def sets(self) -> dict[str, LoadedSet]:
        """The valid sets by stable id."""
        return self._contents.sets

    @property
    def errors(self) -> list[LoadError]:
        """Every problem of the files that were skipped."""
        return self._contents.errors

    @property
    def files(self) -> list[str]:
        """Every challenge file found, valid or not."""
        return self._contents.files

    def ordered(self) -> tuple[LoadedSet, ...]:
        """Return the sets in a stable order (by title)."""
        return self._contents.ordered

    def facts(self) -> tuple[SetFacts, ...]:
        """Return every set's facts, in the order of ordered()."""
        return self._contents.facts

    def facts_of(self, set_id: str) -> SetFacts | None:
        """Return one set's facts, if it is being served."""
        return self._contents.facts_by_id.get(set_id)

    def get(self, set_id: str) -> LoadedSet | None:
        """Return the set with this stable id, if it is being served."""
        return self._contents.sets.get(set_id)

    def item(self, set_id: str, item_id: str) -> tuple[ChallengeSet, ItemBase] | None:
        """Return a set and one of its items by stable ids."""
        contents = self._contents  # one snapshot for both lookups
        item = contents.items.get((set_id, item_id))
        return None if item is None else (contents.sets[set_id].challenge_set, item)

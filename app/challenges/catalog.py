"""The catalog: the challenge sets being served, and the errors of the files that were skipped."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from app.challenges.loader import LoadedSet, LoadError, load_path
from app.challenges.schema import ChallengeSet, ItemBase


@dataclass
class Catalog:
    """Valid sets by stable id plus the load errors; reloadable without a restart."""

    root: Path
    sets: dict[str, LoadedSet] = field(default_factory=dict)
    errors: list[LoadError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, root: Path) -> Catalog:
        """Load every file under root; broken files are reported and skipped."""
        catalog = cls(root=root)
        catalog.reload()
        return catalog

    def reload(self) -> None:
        """Read the folder again and swap in the result at once."""
        report = load_path(self.root, display_root=self.root.parent)
        with self._lock:
            self.sets = {loaded.challenge_set.id: loaded for loaded in report.sets}
            self.errors = report.errors
            self.files = report.files

    def ordered(self) -> list[LoadedSet]:
        """Return the sets in a stable order (by title)."""
        return sorted(self.sets.values(), key=lambda loaded: loaded.challenge_set.title)

    def get(self, set_id: str) -> LoadedSet | None:
        """Return the set with this stable id, if it is being served."""
        return self.sets.get(set_id)

    def item(self, set_id: str, item_id: str) -> tuple[ChallengeSet, ItemBase] | None:
        """Return a set and one of its items by stable ids."""
        loaded = self.get(set_id)
        if loaded is None:
            return None
        item = loaded.challenge_set.item(item_id)
        return None if item is None else (loaded.challenge_set, item)

"""Editing copies of content files in tests: replace text, find the line of a needle."""

from __future__ import annotations

from pathlib import Path

# A topic, a set and a second topic whose cards, items and cheat sheet carry proofs, sources
# and facts (kept out of tests/fixtures, which other tests load whole).
PROVEN_CONTENT = Path(__file__).parent / "proven"


def edit(path: Path, old: str, new: str) -> None:
    """Replace the first `old` in the file with `new` (which must be there)."""
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    """The 1-based number of the first line holding `needle`."""
    lines = path.read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if needle in line)

"""Editing copies of content files in tests: replace text, find the line of a needle."""

from __future__ import annotations

import shutil
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


# A catalogue for copies of the test content: two beliefs the test set's `world-size`
# distractors stand for, corrected by a section of the lesson-drill topic's lesson.
MISCONCEPTIONS_YAML = """\
misconceptions:
  - id: world-size-counts-gpus
    belief: The world size is the number of GPUs on the machine.
    corrected_by: {topic: lesson-drill, section: typed}
  - id: world-size-is-rank
    belief: dist.get_world_size() returns this process's own rank.
    corrected_by: {topic: lesson-drill, section: chosen}
"""


def with_misconceptions(folder: Path, fixtures: Path) -> Path:
    """Give a copy of the test content the lesson-drill topic, a misconception catalogue and
    tags on `world-size`'s distractors (the GPUs one, then this process's rank); return the
    set file."""
    shutil.copytree(fixtures / "lessons", folder / "lesson-drill")
    (folder / "misconceptions.yaml").write_text(MISCONCEPTIONS_YAML)
    set_file = folder / "basics" / "set.yaml"
    tags = (("own a GPU.}", "world-size-counts-gpus"), ("get_rank().}", "world-size-is-rank"))
    for end, name in tags:
        edit(set_file, end, f"{end[:-1]}, misconception: {name}}}")
    return set_file

"""The file tree that docs/first-topic.md says `ranklab new topic` and `new set` write is the one
they write: an author checks their folder against it, so a missing or extra file misleads."""

from __future__ import annotations

import re
from pathlib import Path

from app import cli
from app.config import ROOT

TUTORIAL = ROOT / "docs" / "first-topic.md"


def tree_in_tutorial() -> set[str]:
    """The paths the tutorial's `That writes:` block lists (two spaces of indent a level)."""
    block = re.search(r"That writes:\n\n```text\n(.*?)```", TUTORIAL.read_text(), re.S)
    assert block, "docs/first-topic.md has no `That writes:` tree"
    parents: list[str] = []
    paths: set[str] = set()
    for line in block[1].splitlines():
        level = (len(line) - len(line.lstrip(" "))) // 2
        del parents[level:]
        names = line.split("#")[0].replace("…and the snippets they run", "")
        for name in (part.strip() for part in names.split(",")):
            if name.endswith("/"):
                parents.append(name.rstrip("/"))
            elif name:
                paths.add("/".join([*parents, name]))
    return paths


def test_the_tutorial_lists_every_file_new_topic_and_new_set_write(tmp_path: Path):
    course = tmp_path / "my-course"
    assert cli.main(["new", "topic", "gloo-basics", "--dir", str(course)]) == 0
    new_set = ["new", "set", "gloo-quiz", "--topic", "gloo-basics", "--dir", str(course)]
    assert cli.main(new_set) == 0
    files = [path for path in course.rglob("*") if path.is_file()]
    written = {f"my-course/{path.relative_to(course)}" for path in files}
    assert tree_in_tutorial() == written

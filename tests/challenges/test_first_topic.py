"""docs/first-topic.md is executed as written: each marked command is run in a fresh folder
against a real executor, each shown output is checked, each edit applied, so it cannot rot.

Markers (HTML comments, invisible on the page) come before a fenced block:
`<!-- tutorial: run -->` (each line a command that must exit 0; `run, exit N` for another
status), `<!-- tutorial: output -->` (every line appears in the last command's output) and
`<!-- tutorial: item FILE replaces ID -->` (the YAML item replaces item ID in FILE)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.config import ROOT

TUTORIAL = ROOT / "docs" / "first-topic.md"
BLOCK = re.compile(r"<!-- tutorial: (?P<marker>.*?) -->\n```\w*\n(?P<body>.*?)```", re.S)


@dataclass(frozen=True)
class Step:
    """One marked block of the tutorial."""

    marker: str
    body: str


def steps() -> list[Step]:
    """The tutorial's marked blocks, in order."""
    return [Step(m["marker"], m["body"]) for m in BLOCK.finditer(TUTORIAL.read_text())]


def replace_item(path: Path, item_id: str, item: str) -> None:
    """Replace the set item `- id: item_id` (indented two spaces, up to the next item or the
    comment above it) with this YAML item, as an author would in an editor."""
    lines = path.read_text().splitlines()
    start = lines.index(f"  - id: {item_id}")
    end = start + 1
    while end < len(lines) and not re.match(r"  (- |#)", lines[end]):
        end += 1
    new = [f"  {line}" if line else line for line in item.rstrip("\n").splitlines()]
    path.write_text("\n".join([*lines[:start], *new, *lines[end:]]) + "\n")


def run(command: str, cwd: Path, executor_url: str) -> subprocess.CompletedProcess[str]:
    """Run one `ranklab …` line of the tutorial; verify uses the test session's executor."""
    args = shlex.split(command)
    assert args[0] == "ranklab", f"the tutorial runs only ranklab commands: {command}"
    args = [sys.executable, "-m", "app.cli", *args[1:]]
    if args[3] == "verify":
        args += ["--executor", executor_url]
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{cwd / 'absent.db'}"}  # not recorded
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def test_the_tutorial_has_commands_outputs_and_edits_to_run():
    markers = [step.marker.split()[0].rstrip(",") for step in steps()]
    assert markers.count("run") >= 5 and markers.count("output") >= 4
    assert markers.count("item") == 2


@pytest.mark.executor
@pytest.mark.timeout(900)
def test_the_first_topic_tutorial_runs_as_written(tmp_path, executor_url):
    last = ""
    for step in steps():
        kind, _, rest = step.marker.partition(" ")
        if kind.startswith("run"):
            expected = int(rest.split()[-1]) if "exit" in rest else 0
            commands = [line for line in step.body.splitlines() if line.strip()]
            for number, command in enumerate(commands, start=1):
                result = run(command, tmp_path, executor_url)
                last = result.stdout + result.stderr
                # A block marked `exit N` ends with the command that exits N; those before it
                # succeed.
                want = expected if number == len(commands) else 0
                assert result.returncode == want, f"{command}: exit {result.returncode}\n{last}"
        elif kind == "output":
            seen = [line.rstrip() for line in last.splitlines()]
            for line in step.body.splitlines():
                assert line.rstrip() in seen, (
                    f"the tutorial shows {line!r}; the run printed\n{last}"
                )
        elif kind == "item":
            file_name, _, item_id = rest.partition(" replaces ")
            replace_item(tmp_path / file_name, item_id.strip(), step.body)
        else:
            pytest.fail(f"unknown tutorial marker {step.marker!r}")

"""`ranklab validate` and `ranklab schema` as a person runs them (real subprocesses)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from app.challenges import json_schema
from app.challenges.schema import ChallengeSet
from app.config import ROOT
from tests.conftest import TEST_CHALLENGES


def ranklab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def test_validate_passes_on_the_shipped_challenges():
    result = ranklab("validate", "challenges")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(": ok")


def test_validate_exits_1_and_prints_file_line_col_for_each_broken_copy(tmp_path: Path):
    source = (TEST_CHALLENGES / "basics" / "set.yaml").read_text()
    broken = {
        "duplicate.yaml": source.replace("topic: Collectives", "topic: A\ntopic: B"),
        "unknown.yaml": source.replace("    hint: Count", "    colour: red\n    hint: Count"),
        "syntax.yaml": source.replace("title: Test basics", "title: [Test basics"),
    }
    for name, text in broken.items():
        (tmp_path / name).write_text(text.replace("id: test-basics", f"id: {name[:-5]}"))
    result = ranklab("validate", str(tmp_path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"{tmp_path}/duplicate.yaml:6:1: ")
    assert lines[1].startswith(f"{tmp_path}/syntax.yaml:")
    assert lines[2] == (
        f"{tmp_path}/unknown.yaml:17:5: unknown field 'colour': remove it or check its spelling"
    )


def test_validate_on_a_missing_path_says_so():
    result = ranklab("validate", "no/such/folder")
    assert result.returncode == 2
    assert "no such file or folder" in result.stderr


def test_the_committed_json_schema_is_current():
    committed = json_schema.SCHEMA_PATH.read_text()
    assert committed == json_schema.render(), "stale: run `ranklab schema`"
    assert ranklab("schema", "--check").returncode == 0


def test_schema_check_fails_on_a_stale_copy(tmp_path: Path):
    stale = tmp_path / "schema.json"
    shutil.copy(json_schema.SCHEMA_PATH, stale)
    stale.write_text(stale.read_text().replace("Stable id", "Old id"))
    assert ranklab("schema", "--check", "--output", str(stale)).returncode == 1
    assert ranklab("schema", "--output", str(stale)).returncode == 0
    assert stale.read_text() == json_schema.render()


def test_the_json_schema_describes_every_field_and_forbids_unknown_ones():
    schema = json.loads(json_schema.render())
    assert schema["additionalProperties"] is False
    for definition in schema["$defs"].values():
        for name, field in definition.get("properties", {}).items():
            assert field.get("description"), f"{definition['title']}.{name} has no description"
    assert set(schema["properties"]) == set(ChallengeSet.model_fields)


def test_challenge_files_point_editors_at_the_schema():
    for path in (ROOT / "challenges").rglob("*.yaml"):
        first = path.read_text().splitlines()[0]
        name = {
            "topic.yaml": "topic.schema.json",
            "lab.yaml": "lab.schema.json",
            "misconceptions.yaml": "misconceptions.schema.json",
        }.get(path.name, "challenge-set.schema.json")
        schema = os.path.relpath(ROOT / "challenges" / name, path.parent)
        assert first == f"# yaml-language-server: $schema={schema}", path

"""One folder of a course validates and verifies by itself: its `topic:`, `requires:` and ids
are resolved against the whole course (the folder holding challenge-set.schema.json), and only
the named folder is checked, run and reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app import cli
from app.challenges import course
from app.config import ROOT
from tests.challenges.test_cli import ranklab
from tests.verification.test_verify_cli import json_records, verify

SHIPPED_FOLDERS = ["challenges/collectives", "challenges/labs/collectives-by-hand"]


@pytest.mark.parametrize("folder", SHIPPED_FOLDERS)
def test_validate_of_one_shipped_folder_resolves_its_references_against_the_course(folder):
    result = ranklab("validate", folder)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith(f"read {folder}/ (")
    assert "references against challenges/" in result.stdout
    assert result.stdout.strip().endswith(": ok")


def test_validate_of_one_set_file_of_the_shipped_course_passes():
    result = ranklab("validate", "challenges/collectives/set.yaml")
    assert result.returncode == 0, result.stderr
    assert "1 valid set(s), 0 topic(s)" in result.stdout


def test_the_course_root_is_the_nearest_folder_with_the_set_schema(tmp_path: Path):
    assert course.root_of(ROOT / "challenges" / "labs" / "collectives-by-hand") == (
        ROOT / "challenges"
    )
    assert course.root_of(ROOT / "challenges") == ROOT / "challenges"
    assert course.root_of(tmp_path) == tmp_path  # no schema above: the folder is the course


def scaffold(tmp_path: Path) -> Path:
    """A course made by `ranklab new`: a topic, a set and a lab of it."""
    root = tmp_path / "course"
    assert cli.main(["new", "topic", "demo", "--dir", str(root)]) == 0
    assert cli.main(["new", "set", "demo-basics", "--topic", "demo", "--dir", str(root)]) == 0
    assert cli.main(["new", "lab", "demo-lab", "--topic", "demo", "--dir", str(root)]) == 0
    return root


@pytest.mark.parametrize("folder", ["demo-basics", "labs/demo-lab", "demo"])
def test_validate_of_one_scaffolded_folder_passes(tmp_path: Path, folder: str, capsys):
    root = scaffold(tmp_path)
    capsys.readouterr()
    result = ranklab("validate", str(root / folder))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(": ok")


def test_a_lone_folder_still_reports_its_own_errors_at_their_place(tmp_path: Path, capsys):
    root = scaffold(tmp_path)
    set_file = root / "demo-basics" / "set.yaml"
    text = set_file.read_text()
    set_file.write_text(text.replace("topic: demo\n", "topic: dmeo\n", 1))
    lines = text.splitlines()
    line = next(n for n, one in enumerate(lines, 1) if one == "topic: demo")
    capsys.readouterr()
    result = ranklab("validate", str(root / "demo-basics"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{set_file}:{line}:8: topic 'dmeo' names no topic.yaml; did you mean 'demo'? "
        "(a new topic of its own needs `own_topic: true`)"
    ]


def test_an_id_taken_elsewhere_in_the_course_is_refused_at_the_lone_folder(tmp_path: Path, capsys):
    root = scaffold(tmp_path)
    shutil.copytree(root / "demo-basics", root / "zz-copy")
    capsys.readouterr()
    result = ranklab("validate", str(root / "zz-copy"))
    assert result.returncode == 1
    assert "set id 'demo-basics' is already taken" in result.stderr
    assert str(root / "demo-basics" / "set.yaml") in result.stderr
    # The folder named first by path keeps the id and still validates alone.
    assert ranklab("validate", str(root / "demo-basics")).returncode == 0


@pytest.mark.executor
@pytest.mark.timeout(600)
def test_verify_of_one_shipped_folder_runs_only_the_item_asked_for(executor_url):
    result = verify(
        ROOT / "challenges" / "collectives", executor_url, "--json", "--all",
        "--item", "broadcast-from-rank-1",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    *records, summary = json_records(result.stdout)
    items = [(r["item_id"], r["verdict"]) for r in records if r["type"] == "item"]
    assert items == [("broadcast-from-rank-1", "pass")]
    assert {r["verdict"] for r in records} == {"pass"}  # its inline proof too, if any
    assert summary["ok"] and summary["file_errors"] == []


@pytest.mark.executor
@pytest.mark.timeout(600)
def test_verify_of_one_shipped_lab_folder_passes(executor_url):
    result = verify(
        ROOT / "challenges" / "labs" / "collectives-by-hand", executor_url, "--json", "--all",
        "--item", "collectives-by-hand", "--repeats", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    *records, summary = json_records(result.stdout)
    assert summary["ok"] and records and {r["verdict"] for r in records} == {"pass"}
    assert {r["lab"] for r in records} == {"collectives-by-hand"}


@pytest.mark.executor
@pytest.mark.timeout(600)
def test_verify_of_one_scaffolded_set_folder_passes(tmp_path: Path, executor_url, capsys):
    root = scaffold(tmp_path)
    capsys.readouterr()
    result = verify(root / "demo-basics", executor_url, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    *records, summary = json_records(result.stdout)
    assert {r["item_id"]: r["verdict"] for r in records} == {
        "all-reduce-sum": "pass",
        "broadcast-from-rank-1": "pass",
        "missing-init": "pass",
        "sum-of-three-ranks": "pass",
    }
    assert summary["ok"]

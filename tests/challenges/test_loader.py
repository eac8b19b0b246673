"""The loader: every error as path:line:col, schema errors included; the real content loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges.catalog import Catalog
from app.challenges.loader import load_path
from app.config import ROOT
from tests.conftest import TEST_CHALLENGES

FIXTURE = TEST_CHALLENGES / "basics" / "set.yaml"


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """A copy of the test challenges that a test may break."""
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    return target


def break_file(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def only_error(root: Path) -> str:
    report = load_path(root, display_root=root.parent)
    assert len(report.errors) == 1, report.errors
    return str(report.errors[0])


def test_the_shipped_challenges_load_without_errors():
    report = load_path(ROOT / "challenges")
    assert report.errors == []
    assert len(report.sets) >= 3
    assert all(len(loaded.challenge_set.items) >= 5 for loaded in report.sets)


def test_a_duplicate_key_is_reported_at_its_line_and_column(content: Path):
    break_file(
        content / "basics" / "set.yaml", "topic: Collectives", "topic: Collectives\ntopic: x"
    )
    assert only_error(content).startswith("challenges/basics/set.yaml:6:1:")
    assert "duplicate key" in only_error(content)


def test_an_unknown_field_is_reported_at_the_field(content: Path):
    break_file(
        content / "basics" / "set.yaml",
        "    difficulty: beginner",
        "    difficulty: beginner\n    colour: red",
    )
    assert only_error(content) == (
        "challenges/basics/set.yaml:15:5: unknown field 'colour': remove it or check its spelling"
    )


def test_broken_yaml_syntax_is_reported_with_a_position(content: Path):
    break_file(content / "basics" / "set.yaml", "title: Test basics", "title: [Test basics")
    message = only_error(content)
    assert message.startswith("challenges/basics/set.yaml:")
    line, column = (int(part) for part in message.split(":")[1:3])
    assert line >= 4 and column >= 1


def test_a_schema_error_points_at_the_bad_value(content: Path):
    break_file(content / "basics" / "set.yaml", "difficulty: intermediate", "difficulty: hard")
    assert only_error(content) == (
        "challenges/basics/set.yaml:28:17: difficulty 'hard' is not allowed: "
        "use beginner, intermediate, advanced or expert"
    )


def test_a_missing_field_points_at_its_item(content: Path):
    break_file(content / "basics" / "set.yaml", "    title: Speed-up\n", "")
    assert only_error(content) == (
        "challenges/basics/set.yaml:25:5: missing required field 'title': add `title:` here"
    )


def test_every_error_of_every_file_is_collected(content: Path):
    second = content / "second" / "set.yaml"
    second.parent.mkdir()
    second.write_text("id: second\ntitle: [\n")
    break_file(
        content / "basics" / "set.yaml",
        "    difficulty: beginner",
        "    difficulty: beginner\n    colour: red\n    size: 3",
    )
    report = load_path(content, display_root=content.parent)
    assert len(report.errors) == 3
    assert {error.path for error in report.errors} == {
        "challenges/basics/set.yaml",
        "challenges/second/set.yaml",
    }


def test_a_missing_snippet_file_is_an_error(content: Path):
    path = content / "basics" / "set.yaml"
    break_file(path, "    kind: choice\n", "    kind: predict_output\n    code_file: gone.py\n")
    assert "code_file 'gone.py' not found" in only_error(content)


def test_a_broken_file_is_skipped_and_the_others_are_served(content: Path):
    (content / "broken.yaml").write_text("id: broken\nitems: [\n")
    catalog = Catalog.load(content)
    assert "test-basics" in catalog.sets and "broken" not in catalog.sets
    assert len(catalog.errors) == 1 and catalog.errors[0].path == "challenges/broken.yaml"


def test_reusing_a_set_id_in_another_file_is_an_error(content: Path):
    shutil.copy(content / "basics" / "set.yaml", content / "copy.yaml")
    report = load_path(content, display_root=content.parent)
    assert sorted(loaded.challenge_set.id for loaded in report.sets) == ["test-basics", "test-runs"]
    assert [str(error) for error in report.errors] == [
        "challenges/copy.yaml:3:5: set id 'test-basics' is already taken: "
        "challenges/basics/set.yaml holds it too, and comes first by path. This file is "
        "refused: give it another id"
    ]


def test_a_set_id_taken_is_refused_at_the_file_not_served_before(content: Path):
    """The file being served keeps its id, even where the new one comes first by path."""
    shutil.copy(content / "basics" / "set.yaml", content / "aaa.yaml")
    live = {("set", "test-basics"): "challenges/basics/set.yaml"}
    report = load_path(content, display_root=content.parent, live=live)
    kept = next(one for one in report.sets if one.challenge_set.id == "test-basics")
    assert kept.path == "challenges/basics/set.yaml"
    assert [(error.path, error.line) for error in report.errors] == [("challenges/aaa.yaml", 3)]
    assert "challenges/basics/set.yaml holds it and is being served" in report.errors[0].message

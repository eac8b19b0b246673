"""`ranklab new set|topic|lab`: what it writes validates as it is, meets the floors, and refuses to
write over a folder or an id in use (the test that verifies it on real ranks is in
tests/verification/test_scaffold_verify.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import cli
from app.challenges import loader, report
from app.challenges.catalog import Catalog


def new(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    """Run `ranklab new ... --dir root`; return the exit status, stdout and stderr."""
    code = cli.main(["new", *args, "--dir", str(root)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def scaffold_course(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    """A topic, a set and a lab, each written by `ranklab new`."""
    assert new(capsys, root, "topic", "demo")[0] == 0
    assert new(capsys, root, "set", "demo-basics", "--topic", "demo")[0] == 0
    assert new(capsys, root, "lab", "demo-lab", "--topic", "demo")[0] == 0


def test_each_kind_validates_as_written_without_a_warning(tmp_path, capsys):
    scaffold_course(capsys, tmp_path)
    assert (tmp_path / "demo" / "topic.yaml").is_file()
    assert (tmp_path / "demo-basics" / "set.yaml").is_file()
    assert (tmp_path / "labs" / "demo-lab" / "lab.yaml").is_file()
    loaded = loader.load_path(tmp_path)
    assert loaded.ok, [str(error) for error in loaded.errors]
    assert not loaded.warnings, [str(warning) for warning in loaded.warnings]
    assert [s.challenge_set.id for s in loaded.sets] == ["demo-basics"]
    assert [t.topic.id for t in loaded.topics] == ["demo"]
    assert [lab.lab.id for lab in loaded.labs] == ["demo-lab"]
    assert cli.main(["validate", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip().endswith(": ok")


def test_the_files_start_with_the_schema_line_and_the_folder_gets_the_schemas(tmp_path, capsys):
    scaffold_course(capsys, tmp_path)
    first_lines = {
        path.relative_to(tmp_path).as_posix(): path.read_text().splitlines()[0]
        for path in loader.challenge_files(tmp_path)
    }
    assert first_lines == {
        "demo/topic.yaml": "# yaml-language-server: $schema=../topic.schema.json",
        "demo-basics/set.yaml": "# yaml-language-server: $schema=../challenge-set.schema.json",
        "labs/demo-lab/lab.yaml": "# yaml-language-server: $schema=../../lab.schema.json",
    }
    for name in ("challenge-set.schema.json", "topic.schema.json", "lab.schema.json"):
        assert (tmp_path / name).is_file()
    # Every snippet the YAML names is written beside it.
    loaded = loader.load_path(tmp_path)
    assert set(loaded.sets[0].code) == {
        "all-reduce-sum",
        "broadcast-from-rank-1",
        "missing-init",
        "sum-of-three-ranks",
    }


def test_a_scaffolded_topic_and_set_meet_the_curriculums_floors(tmp_path, capsys):
    scaffold_course(capsys, tmp_path)
    topic = Catalog.load(tmp_path).topic("demo")
    assert topic is not None
    counts = report.TopicCounts.of(topic)
    assert counts.set_items == report.FLOORS["set_items"]
    assert counts.cards == report.FLOORS["cards"]
    assert counts.explain == report.FLOORS["explain"]
    assert counts.labs == 1 and counts.cheat_sheet
    assert counts.meets_floors


def test_an_existing_folder_is_refused_and_left_as_it_was(tmp_path, capsys):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "notes.txt").write_text("mine")
    code, out, err = new(capsys, tmp_path, "topic", "demo")
    assert code == 1 and out == ""
    assert f"{tmp_path / 'demo'} already exists" in err
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["notes.txt"]


def test_an_id_already_used_is_refused_naming_the_file_that_uses_it(tmp_path, capsys):
    scaffold_course(capsys, tmp_path)
    # The same id in another folder: a set id is taken by a set or a topic, a lab's by a lab.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "set.yaml").write_text("id: taken-set\ntitle: [broken\n")
    cases = [
        (("set", "demo-basics", "--topic", "demo"), "set in", "demo-basics/set.yaml"),
        (("set", "demo", "--topic", "demo"), "topic in", "demo/topic.yaml"),
        (("topic", "demo-basics"), "set in", "demo-basics/set.yaml"),
        (("lab", "demo-lab", "--topic", "demo"), "lab in", "labs/demo-lab/lab.yaml"),
    ]
    for args, what, where in cases:
        before = sorted(tmp_path.rglob("*"))
        code, _out, err = new(capsys, tmp_path, *args)
        assert code == 1, args
        assert f"the id {args[1]!r} is already used by the {what}" in err and where in err, err
        assert sorted(tmp_path.rglob("*")) == before
    # An id read from a file that does not validate is still taken.
    code, _out, err = new(capsys, tmp_path, "set", "taken-set", "--topic", "demo")
    assert code == 1 and "elsewhere/set.yaml" in err


def test_a_set_or_lab_must_name_an_existing_topic(tmp_path, capsys):
    assert new(capsys, tmp_path, "topic", "collectives")[0] == 0
    code, _out, err = new(capsys, tmp_path, "set", "basics", "--topic", "colectives")
    assert code == 1
    assert "no topic 'colectives'" in err and "did you mean 'collectives'?" in err
    code, _out, err = new(capsys, tmp_path, "lab", "hello")
    assert code == 1 and "give --topic ID" in err and "collectives" in err
    assert not (tmp_path / "basics").exists() and not (tmp_path / "labs").exists()
    # A topic may be named by its title too, as a set's `topic:` may.
    assert new(capsys, tmp_path, "set", "basics", "--topic", "Collectives")[0] == 0
    assert "topic: collectives\n" in (tmp_path / "basics" / "set.yaml").read_text()


@pytest.mark.parametrize("name", ["Demo", "my_set", "ünicode", "a b", "x" * 101])
def test_a_name_that_is_not_an_id_is_refused(tmp_path, capsys, name):
    code, _out, err = new(capsys, tmp_path, "topic", name)
    assert code == 1 and "cannot be a topic id" in err
    assert not any(tmp_path.iterdir())


def test_a_new_topic_opens_with_a_lesson_whose_examples_have_their_code(tmp_path, capsys):
    """The lesson is the first thing learners see: `ranklab new topic` writes one."""
    assert new(capsys, tmp_path, "topic", "demo")[0] == 0
    (topic,) = loader.load_path(tmp_path).topics
    lesson = topic.topic.lesson
    assert lesson is not None and len(lesson.check) >= 2
    examples = [example.id for _section, example in lesson.examples()]
    assert examples == ["sum-two-ranks", "broadcast-from-rank-1"]
    assert set(topic.lesson_code) == set(examples)
    assert "dist.all_reduce" in topic.lesson_code["sum-two-ranks"]

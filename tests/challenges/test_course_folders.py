"""One folder of a course validates and verifies by itself: its `topic:`, `requires:` and ids
are resolved against the whole course (the folder holding challenge-set.schema.json), and only
the named folder is checked, run and reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app import cli
from app.challenges import course, loader
from app.config import ROOT
from app.verification import proofs
from tests.challenges.test_cli import ranklab
from tests.support.content import line_of
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


def test_a_copy_is_refused_and_the_file_the_proofs_know_keeps_its_id(tmp_path: Path, capsys):
    """A copy that sorts first (aa-copy) used to take a shipped set's id, and the shipped file
    was the one refused: the file whose content the proofs file holds keeps it."""
    root = scaffold(tmp_path)
    report = loader.load_path(root)
    hashes = proofs.current_hashes(report.sets, report.labs, report.topics)
    proven = {key: proofs.Proof("pass", digest) for key, digest in hashes.items()}
    proofs.save(root / proofs.FILE_NAME, proven, "2.13.0+cpu", "gloo")
    shutil.copytree(root / "demo-basics", root / "aa-copy")
    copy = root / "aa-copy" / "set.yaml"
    # Being made into a new set: one of its executable items already edited.
    copy.write_text(copy.read_text().replace("What is the output?", "What does each rank print?"))
    capsys.readouterr()
    result = ranklab("validate", str(root))
    assert result.returncode == 1
    (refused,) = [line for line in result.stderr.splitlines() if "already taken" in line]
    assert refused == (
        f"{copy}:{line_of(copy, 'id: demo-basics')}:5: set id 'demo-basics' is already taken: "
        f"{root / 'demo-basics' / 'set.yaml'} holds it too, and the proofs file holds proofs "
        "of its content. This file is refused: give it another id"
    )
    assert "demo-basics/set.yaml:" not in result.stderr  # the original is not refused


def loaded_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the loader fully loads from now on (a spy on its three readers)."""
    seen: list[str] = []
    for name in ("load_file", "load_topic_file", "load_lab_file"):
        real = getattr(loader, name)

        def spy(path: Path, shown: str, real=real):
            seen.append(str(path))
            return real(path, shown)

        monkeypatch.setattr(loader, name, spy)
    return seen


def add_other_topic(root: Path, requires: str = "") -> Path:
    """A second topic with a set in the course, unrelated to `demo` (unless it `requires` it)."""
    assert cli.main(["new", "topic", "other", "--dir", str(root)]) == 0
    assert cli.main(["new", "set", "other-basics", "--topic", "other", "--dir", str(root)]) == 0
    topic = root / "other" / "topic.yaml"
    text = topic.read_text()
    if requires:
        text = text.replace("order: 100\n", f"order: 100\nrequires: [{requires}]\n", 1)
    # Its facts are its own: the scaffold's are the same in every topic it writes.
    topic.write_text(text.replace("fact: ", "fact: other-"))
    set_file = root / "other-basics" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("fact: ", "fact: other-"))
    return root / "other"


def test_a_lone_folder_loads_its_topic_and_not_the_rest_of_the_course(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = scaffold(tmp_path)
    add_other_topic(root)
    seen = loaded_files(monkeypatch)
    found = course.load(root / "demo-basics")
    assert found.report.ok, found.report.errors
    assert [one.challenge_set.id for one in found.report.sets] == ["demo-basics"]
    assert sorted(seen) == sorted(
        [str(root / "demo" / "topic.yaml"), str(root / "demo-basics" / "set.yaml")]
    )


def test_a_lone_topic_folder_loads_the_topics_it_requires_and_finds_a_cycle_through_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = scaffold(tmp_path)
    add_other_topic(root, requires="demo")
    topic = root / "demo" / "topic.yaml"
    topic.write_text(topic.read_text().replace("order: 100\n", "order: 100\nrequires: [other]\n"))
    seen = loaded_files(monkeypatch)
    found = course.load(root / "demo")
    assert [str(error).split(": ", 1)[1] for error in found.report.errors] == [
        "requires 'other' makes a cycle: demo -> other -> demo"
    ]
    assert str(root / "other" / "topic.yaml") in seen
    assert str(root / "other-basics" / "set.yaml") not in seen


# `requires:` lists as YAML allows them, beyond the `requires: [a]` and indented `- a` forms:
# the scan reads the first (with a comment line inside), and the second (a flow list over
# several lines) it cannot read, so the folder is judged against the whole course.
REQUIRES_FORMS = {
    "a list at the key's indent, a comment inside": "requires:\n# the next one\n- third\n",
    "a flow list over several lines": "requires: [\n  third\n]\n",
}


@pytest.mark.parametrize("form", REQUIRES_FORMS.values(), ids=REQUIRES_FORMS.keys())
def test_a_cycle_through_a_requires_list_in_any_form_is_found_from_a_lone_folder(
    tmp_path: Path, form: str
):
    root = scaffold(tmp_path)
    other = add_other_topic(root)
    assert cli.main(["new", "topic", "third", "--dir", str(root)]) == 0
    third = root / "third" / "topic.yaml"
    text = third.read_text().replace("fact: ", "fact: third-")
    third.write_text(text.replace("order: 100\n", "order: 100\nrequires: [demo]\n", 1))
    topic = other / "topic.yaml"
    topic.write_text(topic.read_text().replace("order: 100\n", "order: 100\n" + form, 1))
    demo = root / "demo" / "topic.yaml"
    demo.write_text(demo.read_text().replace("order: 100\n", "order: 100\nrequires: [other]\n"))
    whole = [str(error) for error in loader.load_path(root).errors]
    assert any("demo -> other -> third -> demo" in error for error in whole), whole
    found = course.load(root / "demo")
    assert [str(error).split(": ", 1)[1] for error in found.report.errors] == [
        "requires 'other' makes a cycle: demo -> other -> third -> demo"
    ]


@pytest.mark.parametrize("folder", ["fsdp-checkpoint", "labs", "collectives/set.yaml"])
def test_a_shipped_folder_alone_gets_the_verdict_the_whole_course_gives_it(folder: str):
    root = ROOT / "challenges"
    everything = loader.load_path(root)
    alone = course.load(root / folder).report
    inside = {str(file) for file in loader.challenge_files(root / folder)}

    def paths(units) -> list[str]:
        return [one.path for one in units if one.path in inside]

    assert alone.errors == [one for one in everything.errors if one.path in inside]
    assert alone.warnings == [one for one in everything.warnings if one.path in inside]
    assert (paths(alone.sets), paths(alone.topics), paths(alone.labs)) == (
        paths(everything.sets),
        paths(everything.topics),
        paths(everything.labs),
    )
    assert alone.sets or alone.labs


@pytest.mark.executor
@pytest.mark.timeout(600)
def test_verify_of_one_shipped_folder_runs_only_the_item_asked_for(executor_url):
    result = verify(
        ROOT / "challenges" / "collectives", executor_url, "--json", "--all",
        "--item", "all-reduce-avg-gloo",  # a plain item: one run set, no variants
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    *records, summary = json_records(result.stdout)
    items = [(r["item_id"], r["verdict"]) for r in records if r["type"] == "item"]
    assert items == [("all-reduce-avg-gloo", "pass")]
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

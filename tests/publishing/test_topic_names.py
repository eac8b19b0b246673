"""A set's or lab's `topic:` names a topic.yaml: a typo is an error with a suggestion, not a new
public topic; a set that starts a topic of its own says so (`own_topic: true`)."""

from __future__ import annotations

from pathlib import Path

from app.challenges.catalog import Catalog
from app.challenges.loader import load_path

TOPIC = """\
id: collectives
title: Collective operations
summary: All-reduce and friends.
"""

SET = """\
id: reduce-drill
title: Reduce drill
topic: {topic}
{extra}description: One question.
badge: {{name: Reducer}}
items:
  - id: first
    kind: choice
    category: Conceptual
    difficulty: beginner
    title: A collective
    prompt: Which is a collective?
    explanation: All-reduce is.
    options:
      - {{id: A, text: "`dist.all_reduce`"}}
      - {{id: B, text: "`print`"}}
    answer: A
"""

LAB = """\
id: reduce-lab
title: Reduce lab
topic: {topic}
summary: Reduce something.
steps:
  - id: one
    title: One
    instructions: Print the rank.
    launch: {{nproc: 2}}
    starter: "print(0)\\n"
    solution: "print(0)\\n"
    checks:
      - says: every rank prints
        expect: {{ranks: {{all: {{stdout_regex: "\\\\d"}}}}}}
"""


def write(folder: Path, topic: str, extra: str = "") -> Path:
    (folder / "collectives").mkdir(parents=True, exist_ok=True)
    (folder / "collectives" / "topic.yaml").write_text(TOPIC)
    (folder / "drill").mkdir(exist_ok=True)
    (folder / "drill" / "set.yaml").write_text(SET.format(topic=topic, extra=extra))
    return folder


def test_a_topic_typo_is_an_error_at_the_topic_with_a_suggestion(tmp_path):
    report = load_path(write(tmp_path, "colectives"), display_root=tmp_path)
    assert [str(error) for error in report.errors] == [
        "drill/set.yaml:3:8: topic 'colectives' names no topic.yaml; did you mean "
        "'collectives'? (a new topic of its own needs `own_topic: true`)"
    ]
    assert report.sets == []
    assert [topic.id for topic in Catalog.load(tmp_path).topics()] == ["collectives"]


def test_a_topic_named_by_title_in_another_case_is_found(tmp_path):
    report = load_path(write(tmp_path, "collective OPERATIONS"), display_root=tmp_path)
    assert report.errors == [] and len(report.sets) == 1


def test_a_title_typo_suggests_the_title(tmp_path):
    report = load_path(write(tmp_path, "Collective operation"), display_root=tmp_path)
    assert "did you mean 'Collective operations'?" in str(report.errors[0])


def test_a_set_that_starts_its_own_topic_says_so(tmp_path):
    write(tmp_path, "Gradient tricks", "own_topic: true\n")
    report = load_path(tmp_path, display_root=tmp_path)
    assert report.errors == []
    assert {topic.title for topic in Catalog.load(tmp_path).topics()} == {
        "Collective operations",
        "Gradient tricks",
    }


def test_a_lab_topic_typo_is_an_error_too(tmp_path):
    write(tmp_path, "collectives")
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "lab.yaml").write_text(LAB.format(topic="collectivs"))
    report = load_path(tmp_path, display_root=tmp_path)
    assert [error.path for error in report.errors] == ["lab/lab.yaml"]
    assert "did you mean 'collectives'?" in report.errors[0].message
    assert report.labs == []

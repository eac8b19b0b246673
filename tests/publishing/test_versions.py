"""A stored version reads back as the unit it was (the gate serves a held unit's live version
from the database): every kind, cards (whose file says `front`/`back`) included."""

from __future__ import annotations

from app.challenges.loader import load_path
from app.publishing import versions
from app.verification import proofs
from tests.conftest import FIXTURES


def test_every_unit_of_a_topic_a_set_and_a_lab_reads_back_with_its_hash():
    report = load_path(FIXTURES / "modes")
    labs = load_path(FIXTURES / "labs" / "hello")
    loaded = [*report.topics, *report.sets, *labs.labs]
    assert {type(one).__name__ for one in loaded} == {"LoadedTopic", "LoadedSet", "LoadedLab"}
    for one in loaded:
        unit = versions.unit_of(one)
        again = versions.stored(unit.kind, unit.path, versions.dump(unit.payload))
        assert (again.kind, again.id, again.hash) == (unit.kind, unit.id, unit.hash)


def test_a_topic_version_keeps_its_lesson_code_and_an_older_one_reads_back_unproven():
    topic = load_path(FIXTURES / "lessons").topics[0]
    unit = versions.unit_of(topic)
    back = versions.stored("topic", unit.path, versions.dump(unit.payload)).loaded
    assert back.lesson_code == topic.lesson_code and "typed-sum" in back.lesson_code  # a code_file
    older = {key: value for key, value in unit.payload.items() if key != "lesson_code"}
    read = versions.stored("topic", unit.path, versions.dump(older)).loaded
    assert "typed-sum" not in read.lesson_code and "chosen-sum" in read.lesson_code
    runs = {run.label: run for run in proofs.lesson_runs(read)}  # no KeyError: it runs empty
    assert runs["lesson example typed-sum"].code == ""

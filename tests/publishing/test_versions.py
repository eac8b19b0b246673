"""A stored version reads back as the unit it was (the gate serves a held unit's live version
from the database): every kind, cards (whose file says `front`/`back`) included."""

from __future__ import annotations

from app.challenges.loader import load_path
from app.publishing import versions
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

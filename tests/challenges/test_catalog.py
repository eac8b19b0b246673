"""The catalog works out at load what pages look up on every request, and a reload replaces it."""

from __future__ import annotations

import shutil
from pathlib import Path

from app.challenges.catalog import Catalog
from tests.conftest import TEST_CHALLENGES


def test_a_set_s_facts_are_counted_once_at_load():
    catalog = Catalog.load(TEST_CHALLENGES)
    facts = catalog.facts_of("test-basics")
    assert facts is not None and facts.set.title == "Test basics"
    assert (facts.question_count, facts.difficulty_mix) == (2, {"beginner": 1, "intermediate": 1})
    assert facts.total_seconds == sum(item.time_limit for item in facts.set.items)
    assert catalog.facts_of("test-basics") is facts  # looked up, not recounted
    assert [fact.set.title for fact in catalog.facts()] == sorted(
        loaded.challenge_set.title for loaded in catalog.sets.values()
    )


def test_an_item_is_found_by_its_stable_ids_without_a_search():
    catalog = Catalog.load(TEST_CHALLENGES)
    found = catalog.item("test-basics", "speedup")
    assert found is not None and found[0].id == "test-basics" and found[1].title == "Speed-up"
    assert catalog.item("test-basics", "no-such-item") is None
    assert catalog.item("no-such-set", "speedup") is None


def test_a_reload_replaces_the_sets_their_facts_and_items_together(tmp_path: Path):
    content = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, content)
    catalog = Catalog.load(content)
    set_file = content / "basics" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("title: Speed-up", "title: Scaling"))
    catalog.reload()
    found = catalog.item("test-basics", "speedup")
    assert found is not None and found[1].title == "Scaling"
    facts = catalog.facts_of("test-basics")
    assert facts is not None and facts.set is found[0]

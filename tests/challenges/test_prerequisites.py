"""A topic's `requires:` names other topics: an unknown id is an error at its line with the
closest id suggested, a cycle is an error at each of its links, and the shipped path is sound."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges.catalog import Catalog
from app.challenges.loader import load_path
from tests.conftest import FIXTURES
from tests.support.content import edit, line_of

SHIPPED = Path(__file__).resolve().parents[2] / "challenges"


@pytest.fixture
def two_topics(tmp_path: Path) -> Path:
    """The drill topic and a second one ('basics', no sets) that a test may make require it."""
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "modes", target / "drill")
    (target / "basics").mkdir()
    (target / "basics" / "topic.yaml").write_text(
        "id: basics\ntitle: Basics\nsummary: First things.\norder: 1\n"
    )
    return target


def test_a_topic_requires_another_by_id(two_topics: Path) -> None:
    edit(two_topics / "drill" / "topic.yaml", "summary:", "requires: [basics]\nsummary:")
    catalog = Catalog.load(two_topics)
    assert catalog.errors == []
    assert catalog.topic("drill").requires == ("basics",)  # type: ignore[union-attr]
    assert next(topic.id for topic in catalog.topics()) == "basics"


def test_an_unknown_required_id_is_an_error_at_its_line_with_a_suggestion(
    two_topics: Path,
) -> None:
    path = two_topics / "drill" / "topic.yaml"
    edit(path, "summary:", "requires:\n  - basic\nsummary:")
    report = load_path(two_topics, display_root=two_topics.parent)
    [error] = report.errors
    assert error.path == "challenges/drill/topic.yaml"
    assert error.line == line_of(path, "  - basic")
    assert "requires 'basic': no topic has that id; did you mean 'basics'?" in error.message


def test_a_cycle_is_an_error_at_each_of_its_links(two_topics: Path) -> None:
    edit(two_topics / "drill" / "topic.yaml", "summary:", "requires: [basics]\nsummary:")
    with (two_topics / "basics" / "topic.yaml").open("a") as basics:
        basics.write("requires: [drill]\n")
    report = load_path(two_topics, display_root=two_topics.parent)
    messages = sorted(f"{error.path}:{error.line}: {error.message}" for error in report.errors)
    assert messages == [
        "challenges/basics/topic.yaml:5: requires 'drill' makes a cycle: basics -> drill -> basics",
        "challenges/drill/topic.yaml:"
        f"{line_of(two_topics / 'drill' / 'topic.yaml', 'requires:')}: "
        "requires 'basics' makes a cycle: basics -> drill -> basics",
    ]


def test_a_topic_cannot_require_itself(two_topics: Path) -> None:
    edit(two_topics / "drill" / "topic.yaml", "summary:", "requires: [drill]\nsummary:")
    report = load_path(two_topics)
    assert any("a topic cannot require itself" in error.message for error in report.errors)


def test_every_shipped_topics_prerequisites_come_before_it_on_the_path() -> None:
    catalog = Catalog.load(SHIPPED)
    assert catalog.errors == []
    order = [topic.id for topic in catalog.topics()]
    first = catalog.topics()[0]
    assert first.requires == () and first.id == "process-groups"
    for topic in catalog.topics():
        for required in topic.requires:
            assert order.index(required) < order.index(topic.id), (topic.id, required)
    assert sum(bool(topic.requires) for topic in catalog.topics()) == len(order) - 1

"""CONTENT.md: the course per topic, counted from the content, and never stale."""

from __future__ import annotations

from app.challenges import report
from app.challenges.catalog import Catalog
from app.config import ROOT
from tests.conftest import FIXTURES


def test_a_topic_is_counted_from_its_sets_cards_explain_items_and_labs():
    catalog = Catalog.load(FIXTURES)
    counts = {c.id: c for c in map(report.TopicCounts.of, catalog.topics())}
    drill = counts["drill"]
    assert (drill.set_items, drill.executable, drill.cards, drill.explain, drill.concepts) == (
        2, 0, 3, 1, 3
    )  # fmt: skip
    assert drill.cheat_sheet and drill.labs == 0 and not drill.meets_floors
    assert counts["collectives"].labs == 1  # the hello-ranks lab names that topic
    assert "| Drill topic (`drill`) | 2 | 0 | 3 | 1 (3) | yes | 0 | not yet |" in report.render(
        catalog
    )


def test_the_committed_content_md_is_current():
    committed = report.CONTENT_PATH.read_text(encoding="utf-8")
    assert committed == report.render(Catalog.load(ROOT / "challenges")), (
        "stale: run `ranklab content`"
    )

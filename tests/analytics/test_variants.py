"""Item statistics group by item and by variant: each variant answered has its own row, under
its parameters, with its own key marked."""

from __future__ import annotations

from sqlmodel import Session

from app.analytics import service as analytics
from app.challenges import variants
from app.db import make_engine
from tests.attempts.test_variants_served import SET, answer_right, pinned, player

__all__ = ["player"]  # the fixture, shared


def test_each_variant_answered_is_a_row_of_its_own(player, database_url):
    shown = []
    for _ in range(2):
        attempt = player.start("variant-basics")
        shown.append(pinned(database_url, attempt))
        answer_right(player, attempt, shown[-1])
    engine = make_engine(database_url)
    with Session(engine) as session:
        catalog = player.client.app.state.catalog  # the app's: it knows the version taken
        rows = analytics.item_rows(session, catalog, "variant-basics")
    engine.dispose()
    by_id = {row.statistics.item_id: row for row in rows}
    for position, item in enumerate(SET.challenge_set.items):
        labels = {variant.key: variant.label for variant in variants.variants_of(item)}
        for keys in shown:
            row = by_id[f"{item.id}@{keys[position]}"]
            assert (row.statistics.attempts, row.statistics.facility) == (1, 100.0)
            assert row.title.endswith(f"({labels[keys[position]]})")
    assert len(rows) == 2 * len(SET.challenge_set.items)

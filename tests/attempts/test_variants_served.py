"""A learner sees a variant they have not seen: each timed attempt draws, per question, a variant
not yet shown to that learner, pins it (reload and resume show it), and judges by it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.attempts import sightings
from app.attempts.models import ItemAttempt
from app.challenges import variants
from app.challenges.loader import load_path
from app.db import make_engine
from app.verification import proofs
from tests.conftest import FIXTURES, make_settings
from tests.support.learner import Learner
from tests.support.options import shown_as

VARIANTS = FIXTURES / "variants"
SET = next(s for s in load_path(VARIANTS).sets if s.challenge_set.id == "variant-basics")


@pytest.fixture
def player(app_factory, database_url):
    """A guest on an app serving the parameterised fixture set."""
    with TestClient(app_factory(database_url, challenges_dir=VARIANTS)) as client:
        person = Learner(client)
        person.start_as_guest()
        yield person


def pinned(database_url: str, attempt_url: str) -> list[str]:
    """The variant keys an attempt pinned, in question order."""
    attempt_id = int(attempt_url.rsplit("/", 1)[1])
    engine = make_engine(database_url)
    with Session(engine) as session:
        rows = session.exec(
            select(ItemAttempt)
            .where(ItemAttempt.set_attempt_id == attempt_id)
            .order_by(col(ItemAttempt.position))
        ).all()
    engine.dispose()
    return [row.variant_key for row in rows]


def answer_right(player: Learner, attempt: str, keys: list[str]) -> None:
    """Answer every question by its own variant's key, the way a learner who knows would."""
    for number, (item, key) in enumerate(zip(SET.challenge_set.items, keys, strict=True), 1):
        shown = variants.render(item, key)
        page = player.get(f"{attempt}/q/{number}").text
        assert shown.title in page  # the variant's own words (its numbers in the title)
        if hasattr(shown, "options"):
            choice = shown_as(page, shown, shown.answer).value  # type: ignore[attr-defined]
        else:
            choice = f"{shown.answer}"  # type: ignore[attr-defined]
        assert player.answer(attempt, number, choice).status_code == 303
        assert "✓ Correct" in player.get(f"{attempt}/q/{number}").text
        player.next(attempt)


def test_a_retake_shows_variants_not_yet_seen_and_a_fresh_perfect_retake_earns_the_badge(
    player, database_url
):
    first = player.start("variant-basics")
    first_keys = pinned(database_url, first)
    assert all(first_keys)  # every item here has parameters: no plain "" variant
    title = variants.render(SET.challenge_set.items[0], first_keys[0]).title
    assert all(title in player.get(f"{first}/q/1").text for _ in range(2))  # reload: the same
    player.answer(first, 1, "nothing-like-an-option")  # refused, the variant is still pinned
    assert pinned(database_url, player.start("variant-basics")) == first_keys  # resume: same
    answer_right(player, first, first_keys)
    assert "Badge earned" in player.get(f"{first}/results").text
    second = player.start("variant-basics")
    second_keys = pinned(database_url, second)
    assert all(a != b for a, b in zip(first_keys, second_keys, strict=True))
    answer_right(player, second, second_keys)
    results = player.get(f"{second}/results").text
    assert "Badge earned" in results  # fresh variants, answered right: it counts
    assert 'data-testid="seen-before"' not in results


def test_once_every_variant_was_shown_a_retake_earns_no_badge(player, database_url):
    # broadcast-src has 3 variants: the 4th attempt must repeat one, whatever the draw.
    shown: list[list[str]] = []
    for _ in range(4):
        attempt = player.start("variant-basics")
        shown.append(pinned(database_url, attempt))
        answer_right(player, attempt, shown[-1])
    broadcast = [keys[1] for keys in shown]
    every = variants.variants_of(SET.challenge_set.items[1])
    assert sorted(broadcast[:3]) == sorted(variant.key for variant in every)  # none twice
    results = player.get(f"{attempt}/results").text
    assert "Badge earned" not in results and 'data-testid="seen-before"' in results


def test_only_proven_variants_are_offered_where_the_gate_asks_for_proofs(tmp_path):
    item = SET.challenge_set.items[1]  # broadcast-src: 3 variants
    found = proofs.variant_hashes(SET, item)
    first, second, third = variants.variants_of(item)
    path = tmp_path / proofs.FILE_NAME
    written = {found[v.key][0]: proofs.Proof("pass", found[v.key][1]) for v in (first, third)}
    proofs.save(path, written, "2.13.0+cpu", "gloo")
    assert sightings.Offer(path, SET).keys(item) == (first.key, third.key)
    assert sightings.valid_key(item, second.key, sightings.Offer(path, SET)) is None
    gated = make_settings("sqlite://", content_gate="proven", challenges_dir=tmp_path)
    assert sightings.offer_for(gated, SET).keys(item) == (first.key, third.key)
    valid = make_settings("sqlite://", challenges_dir=tmp_path)  # the gate "valid": every one
    assert sightings.offer_for(valid, SET).keys(item) == (first.key, second.key, third.key)
    proofs.save(path, {}, "2.13.0+cpu", "gloo")  # none proven: served only published unproven
    assert len(sightings.Offer(path, SET).keys(item)) == 3

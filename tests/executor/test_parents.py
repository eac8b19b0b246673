"""How a run's ranks are spread over warm parents (executor/siblings.py): distinct parents, a
different draw each run, and init's own among the first two ranks (its staged rank has copied
its pages, executor/prefault.py, and is then used by every run of two ranks or more)."""

from __future__ import annotations

from collections import Counter

from executor import identities, siblings


def test_init_is_one_of_the_first_two_parents_and_every_parent_is_drawn_once() -> None:
    seen: Counter[tuple[int | None, ...]] = Counter()
    for _ in range(600):
        parents = siblings.draw_parents([0, 1])
        assert sorted(parents, key=str) == sorted([None, 0, 1], key=str)
        assert parents.index(None) < siblings.STAGED_RANKS
        seen[tuple(parents)] += 1
    # Init first or second, either sibling after it: four orders, each drawn.
    assert len(seen) == 4 and min(seen.values()) > 60, seen


def test_a_lone_or_single_sibling_draw_still_varies() -> None:
    assert siblings.draw_parents([]) == [None]
    draws = {tuple(siblings.draw_parents([3])) for _ in range(200)}
    assert draws == {(None, 3), (3, None)}


def test_the_store_uid_is_no_slot_uid_and_one_per_slot() -> None:
    first, last = identities.FIRST_UID, identities.FIRST_UID + identities.UID_COUNT - 1
    stores = {identities.store_uid(uid) for uid in (first, first + 1, last)}
    assert len(stores) == 3
    assert not any(identities.in_range(uid) for uid in stores)
    assert max(stores) < 2**31  # some tools read uids as signed

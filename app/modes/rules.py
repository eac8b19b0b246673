"""Which questions a session asks: never the same fact twice.

Cards and items carry a `fact:` slug naming the one fact they ask about; several may ask the
same fact in other words (a card and a set's item, or two topics' cards before they are merged).
A quick quiz, a review session and a flashcard day ask each fact at most once.

And where a learner's day starts and ends (their zone's midnights): the new-card limit and
"Study more" last one such day.

Pure: the standard library and the catalog's entries.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, time, timedelta, tzinfo

from app.challenges.catalog import Entry


def fact_of(entry: Entry) -> str | None:
    """The fact an entry asks about (None: untagged, a fact of its own)."""
    return entry.item.fact


def one_per_fact(entries: Iterable[Entry], asked: Iterable[str] = ()) -> list[Entry]:
    """The entries in order, each fact's first only, and none whose fact was already asked."""
    seen = set(asked)
    kept: list[Entry] = []
    for entry in entries:
        fact = fact_of(entry)
        if fact is None or fact not in seen:
            kept.append(entry)
        if fact is not None:
            seen.add(fact)
    return kept


def not_asked_elsewhere(
    entries: Iterable[Entry], asked: Mapping[str, set[tuple[str, str]]]
) -> list[Entry]:
    """The entries whose fact was not already asked today by another card or item (`asked`:
    fact -> the (deck, id) of each entry that asked it). An entry asked again itself, e.g. a
    miss brought back, stays."""
    return [
        entry
        for entry in entries
        if (fact := fact_of(entry)) is None
        or asked.get(fact, set()) <= {(entry.deck, entry.item.id)}
    ]


def draw_quiz(pool: Sequence[Entry], size: int, rng: random.Random) -> list[Entry]:
    """Draw up to `size` questions with no fact twice: one entry of each fact, picked at random
    among those asking it, then a random sample (the same draw as before for a pool with no
    shared facts)."""
    groups: dict[str, list[Entry]] = {}
    for entry in pool:
        fact = fact_of(entry)
        if fact is not None:
            groups.setdefault(fact, []).append(entry)
    chosen = {fact: rng.choice(group) for fact, group in groups.items() if len(group) > 1}
    distinct = [
        entry
        for entry in pool
        if fact_of(entry) not in chosen or chosen[fact_of(entry) or ""] is entry
    ]
    return rng.sample(distinct, min(size, len(distinct)))


def start_of_day(now: datetime, zone: tzinfo) -> datetime:
    """The instant (UTC) the learner's day began: the last midnight in their zone."""
    local = now.astimezone(zone)
    return datetime.combine(local.date(), time(0), tzinfo=zone).astimezone(UTC)


def end_of_day(now: datetime, zone: tzinfo) -> datetime:
    """The instant (UTC) the learner's day ends: the next midnight in their zone."""
    tomorrow = now.astimezone(zone).date() + timedelta(days=1)
    return datetime.combine(tomorrow, time(0), tzinfo=zone).astimezone(UTC)

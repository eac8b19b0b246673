"""Which variant of an item a learner is shown, and the first time they were shown each one.

A badge certifies knowledge, not memory of a fixed bank: a timed question counts toward it only
where its variant was shown to the learner for the first time in that attempt (never before in
any mode: a timed attempt, practice, review, a quick quiz). Every showing is recorded once per
(learner, set, item, variant), the first time, with the timed attempt it was in, if any.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    exists,
    insert,
    literal,
    or_,
    select,
)

from app.attempts import rules
from app.attempts.models import ItemAttempt, ItemSighting
from app.challenges import variants
from app.challenges.loader import LoadedSet
from app.challenges.schema import ItemBase
from app.config import Settings
from app.runs import recorded
from app.verification import proofs

_SIGHTINGS = ItemSighting.__table__  # type: ignore[attr-defined]
_ITEMS = ItemAttempt.__table__  # type: ignore[attr-defined]
TIMED = "timed"


@dataclass(frozen=True)
class Offer:
    """Which variants of a set's items a learner may be shown: the proven ones, where the
    content gate asks for proofs (`proofs_path`; None: every variant, as for the gate "valid")."""

    proofs_path: Path | None = None
    loaded: LoadedSet | None = None

    def keys(self, item: ItemBase) -> tuple[str, ...]:
        """The item's variant keys a learner may be shown, in their order ("" alone for an
        item without parameters). None proven: every one, as the gate served the item only
        because staff published it unproven, marked so."""
        keys = tuple(variant.key for variant in variants.variants_of(item))
        if keys == ("",) or self.proofs_path is None or self.loaded is None:
            return keys
        found = recorded.current(self.proofs_path)
        proven = proofs.proven_variant_keys(found, self.loaded, item)
        return tuple(key for key in keys if key in proven) or keys


EVERY = Offer()


def offer_for(settings: Settings, loaded: LoadedSet | None) -> Offer:
    """The variants of this set a learner may be shown under the settings' content gate."""
    if settings.content_gate != "proven" or loaded is None:
        return EVERY
    return Offer(settings.challenges_dir / proofs.FILE_NAME, loaded)


# Rendered variants, by (the catalog's item object, key): a question page renders its variant
# on every view, and rendering rewrites the snippet and validates the item anew. The item
# itself is kept with its rendering, so a reloaded catalog's new object is never mistaken for
# an old one whose id() was reused. Bounded: the oldest goes first.
_RENDERED: dict[tuple[int, str], tuple[ItemBase, ItemBase]] = {}
_RENDERED_MAX = 512


def shown_item(item: ItemBase, key: str) -> ItemBase:
    """The concrete item of the variant `key` ("": the item itself); KeyError for a key the
    item no longer has."""
    if key == "":
        return item
    found = _RENDERED.get((id(item), key))
    if found is not None and found[0] is item:
        return found[1]
    rendered = variants.render(item, key)
    if len(_RENDERED) >= _RENDERED_MAX:
        _RENDERED.pop(next(iter(_RENDERED)))
    _RENDERED[(id(item), key)] = (item, rendered)
    return rendered


def shown_code(loaded: LoadedSet, item: ItemBase, key: str) -> str | None:
    """The snippet of the variant shown (`item` as shown_item made it): a variant's own,
    rewritten with its values; the set's for an item without parameters."""
    code = getattr(item, "code", None)
    if key and isinstance(code, str):
        return code
    return loaded.code.get(item.id)


def seen_by(connection: Connection, user_id: int, set_id: str) -> dict[str, set[str]]:
    """The variant keys of each of a set's items shown to the learner so far."""
    rows = connection.execute(_SEEN, {"user_id": user_id, "set_id": set_id})
    seen: dict[str, set[str]] = {}
    for item_id, key in rows:
        seen.setdefault(item_id, set()).add(key)
    return seen


def draw(
    connection: Connection,
    user_id: int,
    offer: Offer,
    items: Sequence[ItemBase],
    set_id: str,
) -> list[str]:
    """A variant for each item, one the learner has not been shown yet where one is left."""
    seen = seen_by(connection, user_id, set_id)
    chance = random.SystemRandom()
    return [
        rules.draw_variant(offer.keys(item), seen.get(item.id, set()), chance) for item in items
    ]


def record(
    connection: Connection,
    user_id: int,
    set_id: str,
    item_id: str,
    variant_key: str,
    mode: str,
    now: datetime,
) -> bool:
    """Record that an untimed mode showed the learner this variant; whether it was the first."""
    values = {
        "user_id": user_id,
        "set_id": set_id,
        "item_id": item_id,
        "variant_key": variant_key,
        "mode": mode,
        "now": now,
    }
    return bool(connection.execute(_SHOWN, values).rowcount)


def record_timed(
    connection: Connection, user_id: int, set_id: str, attempt_id: int, position: int, now: datetime
) -> None:
    """Record that a timed attempt opened (showed) its question at `position`, with its variant,
    if the learner had never been shown that variant before."""
    values = {
        "user_id": user_id,
        "set_id": set_id,
        "attempt_id": attempt_id,
        "at": position,
        "now": now,
    }
    connection.execute(_SHOWN_TIMED, values)


def first_sights(connection: Connection, attempt_id: int) -> set[tuple[str, str]]:
    """The (item, variant) pairs this timed attempt showed the learner for the first time."""
    rows = connection.execute(_FIRST_IN, {"attempt_id": attempt_id})
    return {(item_id, key) for item_id, key in rows}


def seen_elsewhere(
    connection: Connection, user_id: int, set_id: str, attempt_id: int
) -> set[tuple[str, str]]:
    """The (item, variant) pairs of the set first shown to the learner outside this attempt:
    its questions that did not count toward its badge. (An attempt from before sightings were
    recorded has none either way: nothing is said of it.)"""
    values = {"user_id": user_id, "set_id": set_id, "attempt_id": attempt_id}
    return {(item_id, key) for item_id, key in connection.execute(_ELSEWHERE, values)}


def counted(row: ItemAttempt, first: set[tuple[str, str]]) -> bool:
    """Whether a question counts toward the badge: its variant was first shown in its attempt."""
    return (row.item_id, row.variant_key) in first


_SEEN = select(_SIGHTINGS.c.item_id, _SIGHTINGS.c.variant_key).where(
    _SIGHTINGS.c.user_id == bindparam("user_id"), _SIGHTINGS.c.set_id == bindparam("set_id")
)
_ELSEWHERE = select(_SIGHTINGS.c.item_id, _SIGHTINGS.c.variant_key).where(
    _SIGHTINGS.c.user_id == bindparam("user_id"),
    _SIGHTINGS.c.set_id == bindparam("set_id"),
    or_(
        _SIGHTINGS.c.set_attempt_id.is_(None),
        _SIGHTINGS.c.set_attempt_id != bindparam("attempt_id"),
    ),
)
_FIRST_IN = select(_SIGHTINGS.c.item_id, _SIGHTINGS.c.variant_key).where(
    _SIGHTINGS.c.set_attempt_id == bindparam("attempt_id")
)


def _not_seen(item_id: Any, variant_key: Any) -> ColumnElement[bool]:
    """No sighting yet of this variant by this learner (the unique index backs it)."""
    return ~exists().where(
        _SIGHTINGS.c.user_id == bindparam("user_id"),
        _SIGHTINGS.c.set_id == bindparam("set_id"),
        _SIGHTINGS.c.item_id == item_id,
        _SIGHTINGS.c.variant_key == variant_key,
    )


_COLUMNS = ("user_id", "set_id", "item_id", "variant_key", "mode", "set_attempt_id", "shown_at")
_now = bindparam("now", type_=_SIGHTINGS.c.shown_at.type)
_user = bindparam("user_id", type_=_SIGHTINGS.c.user_id.type)
_set = bindparam("set_id", type_=_SIGHTINGS.c.set_id.type)
# One statement each: the insert happens only where the learner never saw the variant.
_SHOWN_TIMED = insert(_SIGHTINGS).from_select(
    _COLUMNS,
    select(
        _user,
        _set,
        _ITEMS.c.item_id,
        _ITEMS.c.variant_key,
        literal(TIMED, _SIGHTINGS.c.mode.type),
        _ITEMS.c.set_attempt_id,
        _now,
    ).where(
        and_(
            _ITEMS.c.set_attempt_id == bindparam("attempt_id"),
            _ITEMS.c.position == bindparam("at"),
            _not_seen(_ITEMS.c.item_id, _ITEMS.c.variant_key),
        )
    ),
)
_item = bindparam("item_id", type_=_SIGHTINGS.c.item_id.type)
_key = bindparam("variant_key", type_=_SIGHTINGS.c.variant_key.type)
_SHOWN = insert(_SIGHTINGS).from_select(
    _COLUMNS,
    select(
        _user,
        _set,
        _item,
        _key,
        bindparam("mode", type_=_SIGHTINGS.c.mode.type),
        literal(None, _SIGHTINGS.c.set_attempt_id.type),
        _now,
    ).where(_not_seen(_item, _key)),
)


def pin(
    connection: Connection,
    user_id: int | None,
    deck: str,
    item: ItemBase,
    mode: str,
    since: datetime | None,
    seed: str,
    offer: Offer = EVERY,
) -> str:
    """The variant an untimed showing (practice, review, a quiz question) shows: drawn by `seed`
    among those the learner had not been shown, leaving out what this mode showed from `since`
    (when this showing began: the last practice answer, the card's last review, the quiz's
    start; None: ever), which is this showing's own sighting. The same inputs give the same
    variant, so a reload shows it again though its sighting was recorded meanwhile."""
    keys = offer.keys(item)
    if keys == ("",):
        return ""
    seen: set[str] = set()
    if user_id is not None:
        values = {"user_id": user_id, "set_id": deck, "item_id": item.id, "mode": mode}
        query = _SEEN_ELSEWHERE if since is None else _SEEN_BEFORE
        found = connection.execute(query, {**values, "since": since})
        seen = {key for (key,) in found}
    return rules.draw_variant(keys, seen, random.Random(seed))


def valid_key(item: ItemBase, key: str | None, offer: Offer = EVERY) -> str | None:
    """`key` where it names one of the variants a learner may be shown, else None."""
    return key if key is not None and key in offer.keys(item) else None


_SEEN_ITEM = select(_SIGHTINGS.c.variant_key).where(
    _SIGHTINGS.c.user_id == bindparam("user_id"),
    _SIGHTINGS.c.set_id == bindparam("set_id"),
    _SIGHTINGS.c.item_id == bindparam("item_id"),
)
_OTHER_MODE = _SIGHTINGS.c.mode != bindparam("mode", type_=_SIGHTINGS.c.mode.type)
_SEEN_ELSEWHERE = _SEEN_ITEM.where(_OTHER_MODE)
_SEEN_BEFORE = _SEEN_ITEM.where(
    or_(_OTHER_MODE, _SIGHTINGS.c.shown_at < bindparam("since", type_=_SIGHTINGS.c.shown_at.type))
)

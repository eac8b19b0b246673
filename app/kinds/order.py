"""The order a learner sees an item's options in: shuffled per learner and attempt, stable.

Keys sit wherever an author put them (mostly first, in practice), so options shown in file order
let "always pick A" win badges. Each showing is shuffled instead, from a seed that is a keyed hash
of the secret and the ids of what is being answered (an attempt, a quiz, a learner's practice),
so a reload or a resume shows the same order and nothing has to be stored. The letters the learner
sees are assigned after shuffling; answers, analytics and exports keep the options' own ids.
The page never carries those ids (most keys are option "A"): each option is sent as a token of
the showing's seed and its id, decoded back to the id when the answer arrives.
Pure: the standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Protocol, TypeVar

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Hex digits of an option's token: 40 bits, so two of an item's (at most 8) options share one
# with a chance of about 2**-35.
TOKEN_LENGTH = 10


class Pinnable(Protocol):
    """What ordering needs of an option: its id and where (if anywhere) it is pinned."""

    @property
    def id(self) -> str: ...

    @property
    def pin(self) -> str | None: ...


OptionT = TypeVar("OptionT", bound=Pinnable)


def seed(secret: str, *ids: object) -> str:
    """A seed for one showing: a keyed hash, so the order cannot be worked out from the ids."""
    message = "|".join(str(part) for part in ids).encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def arrange(options: Sequence[OptionT], item_seed: str | None) -> list[OptionT]:
    """The options in the order shown: `pin: first` ones first and `pin: last` ones last, in file
    order; the rest shuffled by the seed (file order when there is none: authoring previews)."""
    first = [option for option in options if option.pin == "first"]
    last = [option for option in options if option.pin == "last"]
    middle = [option for option in options if option.pin not in ("first", "last")]
    if item_seed is not None:
        _shuffle(middle, item_seed)
    return [*first, *middle, *last]


def _shuffle(options: list[OptionT], item_seed: str) -> None:
    """Fisher-Yates, drawing from the seed's SHA-512: 8 draws of 64 bits (an item has at most
    8 options), so every order is equally likely to within 2**-60, and the same on every Python
    (random.Random's algorithms may change between versions; a stored attempt's order may not)."""
    digest = hashlib.sha512(item_seed.encode()).digest()
    for place in range(len(options) - 1, 0, -1):
        draw = int.from_bytes(digest[8 * place : 8 * place + 8], "big")
        other = draw % (place + 1)
        options[place], options[other] = options[other], options[place]


def item_seed(base: str | None, item_id: str) -> str | None:
    """The seed of one item within a showing (each item of an attempt gets its own order)."""
    return None if base is None else f"{base}:{item_id}"


def token(item_seed: str | None, option_id: str) -> str:
    """The value a page sends for an option: opaque and this showing's own, since the seed is a
    keyed hash; the id itself when there is no seed (authoring previews)."""
    if item_seed is None:
        return option_id
    return hashlib.sha256(f"{item_seed}|{option_id}".encode()).hexdigest()[:TOKEN_LENGTH]


def decode(values: Sequence[str], options: Sequence[Pinnable], item_seed: str | None) -> list[str]:
    """The option ids of values a page sent: a token of this showing becomes its option's id;
    anything else is passed on as sent, so an option's own id (an API client, a test) is read as
    itself and a token of another showing stays unknown, for the caller to refuse."""
    ids = {token(item_seed, option.id): option.id for option in options}
    return [ids.get(value, value) for value in values]


def letters(ordered: Sequence[OptionT]) -> dict[str, str]:
    """The letter the learner sees for each option id, by its place in the shown order."""
    return {option.id: LETTERS[place] for place, option in enumerate(ordered)}

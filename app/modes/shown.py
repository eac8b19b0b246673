"""Which flashcard a grade is for: a page that shows a card signs what it showed.

A grade is accepted only with the token of the page that showed that card in the state it is
in now, so a card is graded once per showing (a second tab, a resent form or a grade sent for a
card no page showed is refused), and the grade buttons themselves sit on the card's back (a
closed <details>): they are there to press only once the card is flipped. The token names the
learner it was shown to (no one, for a visitor not yet signed in): one shown to another learner
is refused.

Pure: the standard library.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime


def token(
    secret: str, user_id: int | None, deck: str, card_id: str, last_review: datetime | None
) -> str:
    """The token a page showing this card to this learner (None: a visitor not signed in),
    last reviewed then (None: never), sends with a grade."""
    seen = "new" if last_review is None else last_review.isoformat()
    learner = "visitor" if user_id is None else str(user_id)
    message = f"flashcard-shown\0{learner}\0{deck}\0{card_id}\0{seen}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def matches(
    offered: str,
    secret: str,
    user_id: int | None,
    deck: str,
    card_id: str,
    last: datetime | None,
) -> bool:
    """Whether a grade's token is the one for this card as it stands now, shown to this
    learner (None: the grade's sender was not signed in)."""
    expected = token(secret, user_id, deck, card_id, last)
    return hmac.compare_digest(offered.encode(), expected.encode())

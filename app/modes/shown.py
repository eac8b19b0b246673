"""Which flashcard a grade is for: a page that shows a card signs what it showed.

A grade is accepted only with the token of the page that showed that card in the state it is
in now, so a card is graded once per showing (a second tab, a resent form or a grade sent for a
card no page showed is refused), and the grade buttons themselves sit on the card's back (a
closed <details>): they are there to press only once the card is flipped.

Pure: the standard library.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime


def token(secret: str, deck: str, card_id: str, last_review: datetime | None) -> str:
    """The token a page showing this card, last reviewed then (None: never), sends with a grade."""
    seen = "new" if last_review is None else last_review.isoformat()
    message = f"flashcard-shown\0{deck}\0{card_id}\0{seen}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def matches(offered: str, secret: str, deck: str, card_id: str, last: datetime | None) -> bool:
    """Whether a grade's token is the one for this card as it stands now."""
    return hmac.compare_digest(offered.encode(), token(secret, deck, card_id, last).encode())

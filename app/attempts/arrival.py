"""When an answer first reached the server, carried by the busy page's resend.

An answer refused with 503 (app.writes: nothing stored) is sent again by the busy page a
moment later. It is judged at the time its first copy arrived, not at the resend's: the
server's load must not make a timely answer late. The page carries that time signed with the
app's secret and bound to the very answer (the question's URL, its submission token and its
choices), so it cannot be forged, moved to another answer, or kept for long.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

FIELD = "first_sent"
# The busy page resends by itself within seconds (Retry-After): a minute covers that, and keeps
# short the time a stamp collected for one choice could be replayed once the key is known.
MAX_AGE = timedelta(minutes=1)  # a resend later than this is judged when it comes


def _signature(secret: str, path: str, token: str, choices: Sequence[str], at_ms: int) -> str:
    message = "\n".join([path, token, ",".join(sorted(choices)), str(at_ms)])
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()[:32]


def stamp(secret: str, path: str, token: str, choices: Sequence[str], at: datetime) -> str:
    """The busy page's field value: when this answer first arrived, signed."""
    at_ms = int(at.timestamp() * 1000)
    return f"{at_ms}.{_signature(secret, path, token, choices, at_ms)}"


def judged_at(
    secret: str,
    path: str,
    token: str | None,
    choices: Sequence[str],
    value: str | None,
    now: datetime,
) -> datetime:
    """When to judge this answer: its first arrival if the stamp is genuine and recent, else now."""
    if not token or not value or "." not in value:
        return now
    at_text, _, signature = value.partition(".")
    if not at_text.isdigit() or len(at_text) > 15:
        return now
    expected = _signature(secret, path, token, choices, int(at_text))
    if not hmac.compare_digest(signature, expected):
        return now
    first = datetime.fromtimestamp(int(at_text) / 1000, UTC)
    if first > now or now - first > MAX_AGE:
        return now
    return first

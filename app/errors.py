"""One documented error tree, rendered by one handler as an HTML page or JSON.

RankLabError             500  something went wrong on our side
├── BadRequest           400  the request itself is malformed or invalid
├── LoginRequired        401  a page needs a signed-in user (HTML: redirect to log in)
├── Forbidden            403  signed in, but not allowed (also a failed CSRF check)
├── NotFound             404  no such set, attempt or question (for this user)
├── Conflict             409  the request clashes with the state: time up, no attempts left
├── TooManyRequests      429  over a per-learner limit (Retry-After where the wait is known)
└── Unavailable          503  a service the request needs cannot serve it now (Retry-After, ditto)
    └── Busy             503  too many writes waiting: nothing was stored, retry (Retry-After)
"""

from __future__ import annotations

from typing import ClassVar


class RankLabError(Exception):
    """Base of every error the app raises on purpose."""

    status_code: ClassVar[int] = 500
    title: ClassVar[str] = "Something went wrong"

    def __init__(self, message: str | None = None, retry_after: int | None = None) -> None:
        super().__init__(message or self.title)
        self.message = message or self.title
        self.retry_after = retry_after  # seconds, sent as Retry-After when known


class BadRequest(RankLabError):
    """The request is malformed or a value is invalid."""

    status_code = 400
    title = "Bad request"


class LoginRequired(RankLabError):
    """The page needs a user; the HTML handler redirects to the log-in page."""

    status_code = 401
    title = "Please start as a guest or log in"


class Forbidden(RankLabError):
    """The user may not do this."""

    status_code = 403
    title = "Not allowed"


class NotFound(RankLabError):
    """The thing asked for does not exist, or does not belong to this user."""

    status_code = 404
    title = "Not found"


class Conflict(RankLabError):
    """The request clashes with the current state (late answer, no attempts left)."""

    status_code = 409
    title = "Refused"


class TooManyRequests(RankLabError):
    """Over a per-learner limit (runs a minute); the message says how long to wait."""

    status_code = 429
    title = "Too many requests"


class Unavailable(RankLabError):
    """A service the request needs (the executor's sandbox) cannot serve it now."""

    status_code = 503
    title = "Unavailable"


class Busy(Unavailable):
    """Too many writes are waiting their turn: refused before anything was stored, so sending
    the same request again (the busy page does, by itself) is safe; `retry_after` in seconds."""

    title = "Busy for a moment"

    def __init__(self, message: str | None = None, retry_after: int = 2) -> None:
        super().__init__(message, retry_after)
        self.retry_after: int = retry_after
        self.resend: dict[str, str] = {}  # fields the busy page's resend adds or replaces

"""Bound every request's body: its size (413) and the time it takes to arrive (408).

Without this, a route read a whole body before any check: one 300 MiB POST without a cookie
took the app from 151 to 743 MiB. A body declared over its route's limit (Content-Length) is
refused before a byte of it is read; a chunked one is counted as it comes and refused once
past the limit. A body that stops arriving (no bytes for `body_idle_s`) or is not complete
within `body_timeout_s` is refused with 408, so a slow sender holds no request open for long.

Both are raised from the request's `receive`, as an HTTPException: the app's one error
handler renders them (an HTML page, htmx's fragment or JSON), and a route that never reads
its body is not refused. uvicorn stops reading a socket whose app does not read (flow
control), and closes the connection after a response sent before the body was read.
"""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.config import Settings

# Lab code is sent as a form field: percent-encoded, a character takes at most 9 bytes
# (a 3-byte UTF-8 character, each byte %XX).
_ENCODED_BYTES_PER_CHAR = 9
_CODE_PREFIX = "/labs/"  # the lab routes: a step's draft and runs carry its code


def limit_for(path: str, settings: Settings) -> int:
    """The largest body the route at `path` accepts, in bytes."""
    if path.startswith(_CODE_PREFIX):
        return _ENCODED_BYTES_PER_CHAR * settings.lab_code_max_chars + settings.form_max_bytes
    return settings.form_max_bytes


def too_large(limit: int) -> HTTPException:
    """The refusal of a body over `limit` bytes."""
    return HTTPException(
        413, f"The request is too large: this page accepts at most {limit:,} bytes."
    )


def too_slow(seconds: float) -> HTTPException:
    """The refusal of a body that stalled or took longer than `seconds` in all."""
    return HTTPException(
        408, f"The request did not arrive in time (its body stalled or took over {seconds:g} s)."
    )


class BodyLimits:
    """ASGI middleware: the app's `receive` refuses an oversized or stalled body."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with a bounded `receive`."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = limit_for(scope["path"], self.settings)
        declared, chunked = _framing(scope)
        if not declared and not chunked:  # no body (a page's GET): nothing to bound
            await self.app(scope, receive, send)
            return
        if declared is not None and declared > limit:
            refusal = too_large(limit)

            async def refuse() -> Message:
                raise refusal  # before reading a byte of it

            await self.app(scope, refuse, send)
            return
        await self.app(scope, self._bounded(receive, limit), send)

    def _bounded(self, receive: Receive, limit: int) -> Receive:
        idle_s, total_s = self.settings.body_idle_s, self.settings.body_timeout_s
        loop = asyncio.get_running_loop()
        deadline = loop.time() + total_s
        received = 0
        complete = False

        async def bounded_receive() -> Message:
            nonlocal received, complete
            if complete:  # after the body: waiting for a disconnect is not bounded here
                return await receive()
            wait_s = min(idle_s, deadline - loop.time())
            try:
                message = await asyncio.wait_for(receive(), max(wait_s, 0.0))
            except TimeoutError:
                raise too_slow(total_s) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large(limit)
                complete = not message.get("more_body", False)
            return message

        return bounded_receive


def _framing(scope: Scope) -> tuple[int | None, bool]:
    """The declared body length (None: none, or not a number) and whether it is chunked."""
    declared, chunked = None, False
    for name, value in scope["headers"]:
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            declared = int(text) if text.isdigit() else None
        elif name == b"transfer-encoding":
            chunked = True
    return declared, chunked

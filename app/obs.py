"""Observability per request: a request id, its latency in the metrics, JSON log lines.

Every request gets an id: the caller's X-Request-ID when it is short and plain (a proxy's or a
load balancer's), else a new one. It goes back in the response's X-Request-ID header and lives
in a context variable for the request's whole life (`current_request_id()`), so every log line
written while serving it carries it, and the job bus can carry it into the runs it submits.

With RANKLAB_LOG_FORMAT=json each log line is one JSON object (time, level, logger, message,
request_id); with RANKLAB_ACCESS_LOG=true too, this middleware writes one access line per request
(method, path, status, duration_ms) in place of uvicorn's, which knows neither.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID_KEY = REQUEST_ID_HEADER.lower().encode()
# Short and plain: it is logged and echoed, so nothing that could forge a log line or a header.
VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
ACCESS_FIELDS = ("method", "path", "status", "duration_ms")

_request_id: ContextVar[str | None] = ContextVar("ranklab_request_id", default=None)
access_log = logging.getLogger("ranklab.access")


def current_request_id() -> str | None:
    """The id of the request being served in this context (None outside a request)."""
    return _request_id.get()


def new_request_id() -> str:
    """A fresh request id: 32 hex digits (128 random bits)."""
    return os.urandom(16).hex()  # what uuid4().hex holds, without building a UUID


def accepted_request_id(offered: str | None) -> str:
    """The caller's id when it is short and made of safe characters, else a new one."""
    if offered is not None and VALID_REQUEST_ID.fullmatch(offered):
        return offered
    return new_request_id()


def _offered_request_id(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == _REQUEST_ID_KEY:
            return bytes(value).decode("latin-1")
    return None


class RequestObserver:
    """Per request: take or make its id, time it into the latency histogram (by route
    template), and write the access line when asked for.

    A plain ASGI middleware, the outermost of the app's own, like app.main.SecurityHeaders:
    Starlette's BaseHTTPMiddleware would cost far more per page than this does.
    """

    def __init__(self, app: ASGIApp, access_log: bool = False) -> None:
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request under its id; count it once its response has ended."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = accepted_request_id(_offered_request_id(scope))
        encoded = request_id.encode()  # plain ASCII: taken only if it matched, else made here
        token = _request_id.set(request_id)
        status = 500  # unless a response starts: an exception becomes Starlette's 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # Appended as is: nothing inside sets this header (MutableHeaders would search).
                message["headers"] = [*message.get("headers", ()), (_REQUEST_ID_KEY, encoded)]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except BaseException:
            # The id stays set: the server logs the traceback next, in this same task (whose
            # context ends with the request), and that line should carry it too.
            self._done(scope, status, started)
            raise
        self._done(scope, status, started)
        _request_id.reset(token)

    def _done(self, scope: Scope, status: int, started: float) -> None:
        seconds = time.perf_counter() - started
        metrics.observe_request(scope["method"], metrics.route_template(scope), status, seconds)
        if self.access_log:
            self._access_line(scope, status, seconds)

    def _access_line(self, scope: Scope, status: int, seconds: float) -> None:
        # The path without its query string: queries may carry what should not be logged.
        fields = {
            "method": scope["method"],
            "path": scope["path"],
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
        }
        access_log.info("%s %s %s", fields["method"], fields["path"], status, extra=fields)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and the access
    fields (method, path, status, duration_ms) when the record has them."""

    def format(self, record: logging.LogRecord) -> str:
        """Render one record as a single line of JSON."""
        document: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or current_request_id(),
        }
        for field in ACCESS_FIELDS:
            if hasattr(record, field):
                document[field] = getattr(record, field)
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            document["stack"] = self.formatStack(record.stack_info)
        return json.dumps(document, default=str)


def json_log_config(level: str = "INFO") -> dict[str, Any]:
    """A logging.config.dictConfig for JSON lines on stderr: the app's loggers and uvicorn's."""
    propagate = {"handlers": [], "level": level, "propagate": True}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "app.obs.JsonFormatter"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            **{name: dict(propagate) for name in ("uvicorn", "uvicorn.error", "ranklab")},
            # Alembic says which plugins it set up at import: noise in a server's log.
            "alembic": {"level": "WARNING"},
        },
    }

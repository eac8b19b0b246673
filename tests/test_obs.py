"""Request ids and JSON log lines: the id is taken (if plain) or made, echoed, and carried by
every log line written while the request is served."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from app import obs
from tests.support.live import serving
from tests.support.waiting import wait_for

LATENCY = "ranklab_http_request_duration_seconds_count"


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """What the app's loggers write, as JSON lines (RANKLAB_LOG_FORMAT=json's formatter)."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(obs.JsonFormatter())
    logger = logging.getLogger("ranklab")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield written
    logger.removeHandler(handler)
    logger.setLevel(level)


def parsed(written: io.StringIO) -> list[dict[str, object]]:
    """Each line written, parsed: every line must be one JSON object."""
    return [json.loads(line) for line in written.getvalue().splitlines()]


def test_a_plain_request_id_from_the_caller_is_echoed(client):
    response = client.get("/", headers={"X-Request-ID": "lb-7f3a.2_b:9"})
    assert response.headers["x-request-id"] == "lb-7f3a.2_b:9"


@pytest.mark.parametrize(
    "offered",
    ["x" * 65, "has space", "new\nline", "semi;colon", "ünï", ""],
    ids=["too-long", "space", "newline", "semicolon", "non-ascii", "empty"],
)
def test_a_request_id_that_is_long_or_odd_is_replaced_by_a_new_one(offered):
    accepted = obs.accepted_request_id(offered)
    assert accepted != offered
    assert len(accepted) == 32 and int(accepted, 16) >= 0


def test_an_odd_request_id_never_reaches_the_response(client):
    response = client.get("/", headers={"X-Request-ID": "x" * 65})
    assert len(response.headers["x-request-id"]) == 32
    assert "xxxx" not in response.headers["x-request-id"]


def test_without_a_request_id_each_request_gets_its_own(client):
    first, second = (client.get("/").headers["x-request-id"] for _ in range(2))
    assert first != second and len(first) == 32


def test_error_pages_carry_the_request_id_too(client):
    response = client.get("/no-such-page", headers={"X-Request-ID": "req-404"})
    assert response.status_code == 404 and response.headers["x-request-id"] == "req-404"


def test_outside_a_request_there_is_no_request_id():
    assert obs.current_request_id() is None


def observed_app(access_log: bool) -> FastAPI:
    """A bare app behind the middleware whose route logs, as app code does, from a thread."""
    app = FastAPI()

    @app.get("/items/{item_id}")
    def item(item_id: int) -> dict[str, object]:
        logging.getLogger("ranklab.items").info("looked at %s", item_id)
        return {"item": item_id, "request_id": obs.current_request_id()}

    @app.get("/broken")
    def broken() -> None:
        raise RuntimeError("a bug")

    app.add_middleware(obs.RequestObserver, access_log=access_log)
    return app


def test_a_log_line_written_while_serving_carries_the_request_id(json_lines):
    with TestClient(observed_app(access_log=False)) as client:
        response = client.get("/items/7", headers={"X-Request-ID": "trace-42"})
    assert response.json() == {"item": 7, "request_id": "trace-42"}
    [line] = parsed(json_lines)
    assert line["message"] == "looked at 7" and line["request_id"] == "trace-42"
    assert (line["level"], line["logger"]) == ("INFO", "ranklab.items")
    assert str(line["time"]).endswith("+00:00")


def test_the_access_line_has_method_path_status_and_duration(json_lines):
    with TestClient(observed_app(access_log=True)) as client:
        client.get("/items/8?secret=1", headers={"X-Request-ID": "trace-43"})
        client.get("/nothing-here", headers={"X-Request-ID": "trace-44"})
    lines = [line for line in parsed(json_lines) if line["logger"] == "ranklab.access"]
    assert [(line["request_id"], line["path"], line["status"]) for line in lines] == [
        ("trace-43", "/items/8", 200),  # no query string: it may hold what must not be logged
        ("trace-44", "/nothing-here", 404),
    ]
    assert all(line["method"] == "GET" for line in lines)
    assert all(isinstance(line["duration_ms"], float) for line in lines)


def test_a_request_that_raises_is_logged_and_counted_as_a_500(json_lines):
    labels = {"method": "GET", "route": "/broken", "status_class": "5xx"}
    before = REGISTRY.get_sample_value(LATENCY, labels) or 0.0
    app = observed_app(access_log=True)
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/broken", headers={"X-Request-ID": "trace-500"}).status_code == 500
    [access] = [line for line in parsed(json_lines) if line["logger"] == "ranklab.access"]
    assert (access["status"], access["request_id"]) == (500, "trace-500")
    assert REGISTRY.get_sample_value(LATENCY, labels) == before + 1


def test_the_servers_traceback_line_for_a_failed_request_carries_its_id():
    """uvicorn logs the exception after the app has raised: the line still has the id."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(obs.JsonFormatter())
    with serving(observed_app(access_log=False)) as base:
        server_log = logging.getLogger("uvicorn.error")  # configured as the server started
        server_log.addHandler(handler)
        try:
            response = httpx.get(f"{base}/broken", headers={"X-Request-ID": "trace-tb"})
            # The client may get the 500 before the server has written its traceback line.
            wait_for(lambda: "exception" in written.getvalue(), 10, "the traceback line")
        finally:
            server_log.removeHandler(handler)
    assert response.status_code == 500
    [line] = [line for line in parsed(written) if "exception" in line]
    assert line["request_id"] == "trace-tb" and "RuntimeError: a bug" in str(line["exception"])


def test_no_access_line_unless_asked_for(json_lines):
    with TestClient(observed_app(access_log=False)) as client:
        client.get("/items/9")
    assert [line["logger"] for line in parsed(json_lines)] == ["ranklab.items"]


def test_the_app_writes_access_lines_only_with_json_logs_and_the_access_log_on(
    app_factory, sqlite_url, json_lines
):
    for log_format, access_log, expected in [
        ("text", True, 0),  # uvicorn writes text access lines itself
        ("json", False, 0),
        ("json", True, 1),
    ]:
        before = len(parsed(json_lines))
        app = app_factory(sqlite_url, log_format=log_format, access_log=access_log)
        with TestClient(app) as client:
            client.get("/static/js/run.js")
        written = parsed(json_lines)[before:]
        assert sum(line["logger"] == "ranklab.access" for line in written) == expected


def test_an_exception_becomes_one_json_line_with_its_traceback():
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        record = logging.LogRecord(
            "ranklab", logging.ERROR, __file__, 1, "failed: %s", ("x",), sys.exc_info()
        )
    text = obs.JsonFormatter().format(record)
    assert "\n" not in text
    line = json.loads(text)
    assert line["message"] == "failed: x" and line["request_id"] is None
    assert "ValueError: bad" in str(line["exception"])


def test_the_json_logging_config_sends_every_logger_through_the_json_formatter():
    config = obs.json_log_config()
    assert config["formatters"]["json"]["()"] == "app.obs.JsonFormatter"
    assert config["root"]["handlers"] == ["stderr"]
    loggers = config["loggers"]
    assert all(loggers[name]["propagate"] for name in ("uvicorn", "uvicorn.error", "ranklab"))
    assert loggers["alembic"]["level"] == "WARNING"  # its import-time chatter stays out

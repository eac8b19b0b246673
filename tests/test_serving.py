"""How the app serves pages: templates compiled once (re-read only in development, on request),
challenge text rendered once, and `ranklab serve` without an access log unless asked for."""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import socket
import sys
from typing import Any

import pytest
import uvicorn
from jinja2 import Environment
from pydantic import ValidationError

from app import embedded, serving
from app.config import Settings
from app.main import create_app
from app.templating import build_templates
from tests.conftest import make_settings


def test_templates_are_not_checked_for_changes_on_every_render(sqlite_url):
    assert build_templates().env.auto_reload is False
    app = create_app(make_settings(sqlite_url))
    assert app.state.templates.env.auto_reload is False


def test_reloading_templates_is_a_development_setting_asked_for_explicitly(sqlite_url):
    development = make_settings(sqlite_url, environment="development", reload_templates=True)
    assert create_app(development).state.templates.env.auto_reload is True
    with pytest.raises(ValidationError, match="development only"):
        Settings(environment="production", secret_key="s" * 32, reload_templates=True)


def test_challenge_text_is_rendered_once_and_its_html_reused():
    filters = build_templates().env.filters
    text = "Run `torch.distributed` with **two** ranks."
    assert filters["markdown"](text) is filters["markdown"](text)
    assert "<strong>two</strong>" in filters["markdown"](text)
    code = "import torch\nprint(torch.ones(2))\n"
    assert filters["highlight"](code) is filters["highlight"](code)


def test_a_dicts_keys_read_as_in_plain_jinja_only_without_an_exception_each():
    source = (
        "{{ d.title }}|{{ d.missing is defined }}|{{ d.get('items') }}|{{ d.items() | length }}"
        "|{{ d.__class__.__name__ }}|{{ o.real }}"
    )
    values = {"d": {"title": "Ranks", "items": 3, "get": "shadowed?"}, "o": 5}
    plain = Environment(autoescape=True).from_string(source).render(values)
    ours = build_templates().env.from_string(source).render(values)
    assert ours == plain == "Ranks|False|3|3|dict|5"
    raised = []
    trace = sys.gettrace()

    def record(frame: Any, event: str, argument: Any) -> Any:
        if event == "exception" and argument[0] is AttributeError:
            raised.append(frame.f_code.co_name)
        return record

    sys.settrace(record)
    try:
        build_templates().env.from_string("{{ d.title }}{{ d.title }}").render(values)
    finally:
        sys.settrace(trace)
    assert raised == []  # Jinja2's own getattr raises one per lookup before it tries the key


@pytest.fixture
def served(monkeypatch) -> dict[str, Any]:
    """What `ranklab serve` hands to uvicorn (no server is started)."""
    seen: dict[str, Any] = {}
    monkeypatch.setattr(embedded, "_run_server", lambda app, held, **options: seen.update(options))
    yield seen
    gc.unfreeze()  # serve freezes what it built, for a long-lived process; not this one's


def test_serve_writes_no_access_log_by_default(served, sqlite_url):
    embedded.serve(make_settings(sqlite_url), "127.0.0.1", 8000, with_executor=False)
    assert served["access_log"] is False and served["log_level"] == "info"


def test_the_access_log_is_a_setting(served, sqlite_url):
    settings = make_settings(sqlite_url, access_log=True)  # RANKLAB_ACCESS_LOG=true
    embedded.serve(settings, "127.0.0.1", 8000, with_executor=False)
    assert served["access_log"] is True


def test_a_code_block_in_markdown_is_one_highlighted_pre() -> None:
    from app.templating import markdown

    html = str(markdown("Look:\n\n```python\nx = torch.ones(2)\n```\n"))
    assert html.count("<pre") == 1  # a nested <pre> left a blank band under the code
    assert '<pre class="highlight" tabindex="0"><code>' in html
    assert '<span class="n">torch</span>' in html


def test_json_logs_replace_uvicorns_lines_and_access_log(served, sqlite_url):
    settings = make_settings(sqlite_url, log_format="json", access_log=True)
    embedded.serve(settings, "127.0.0.1", 8000, with_executor=False)
    formatter = served["log_config"]["formatters"]["json"]["()"]
    assert formatter == "app.obs.JsonFormatter"
    assert served["access_log"] is False  # the app writes it, with the request id and duration


@pytest.fixture
def served_workers(monkeypatch) -> dict[str, Any]:
    """What `ranklab serve --workers N` hands to uvicorn, and the metrics folder it set."""
    seen: dict[str, Any] = {}

    def run(app: object, **options: Any) -> None:
        seen.update(options, app=app, folder=os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

    monkeypatch.setattr(embedded.uvicorn, "run", run)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    return seen


def test_workers_build_the_app_from_the_environment_and_share_a_metrics_folder(
    served_workers, sqlite_url
):
    settings = make_settings(sqlite_url, queue_url="redis://redis:6379/0")
    assert embedded.serve(settings, "0.0.0.0", 8000, workers=3) == 0
    assert served_workers["app"] == "app.main:create_app" and served_workers["factory"] is True
    assert served_workers["workers"] == 3
    assert served_workers["folder"] is not None  # made for them, and removed afterwards
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ


def test_workers_empty_the_metrics_folder_they_are_given(
    served_workers, sqlite_url, tmp_path, monkeypatch
):
    (tmp_path / "counter_4711.db").write_bytes(b"left by an earlier start")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    embedded.serve(make_settings(sqlite_url), "0.0.0.0", 8000, with_executor=False, workers=2)
    assert served_workers["folder"] == str(tmp_path) and list(tmp_path.iterdir()) == []


def test_workers_refuse_the_embedded_executor(served_workers, sqlite_url, capsys):
    assert embedded.serve(make_settings(sqlite_url), "0.0.0.0", 8000, workers=2) == 2
    assert "RANKLAB_QUEUE_URL" in capsys.readouterr().err and served_workers == {}


class _Counted(asyncio.Protocol):
    made: list[asyncio.BaseTransport] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.made.append(transport)


def _turns(loop: asyncio.AbstractEventLoop, count: int) -> None:
    for _ in range(count):
        loop.run_until_complete(asyncio.sleep(0))


@pytest.mark.parametrize("sock_given", [False, True], ids=["host-port", "socket"])
def test_the_servers_loop_accepts_every_waiting_connection_in_one_turn(sock_given):
    """The class's learners open connections while the loop is busy; the next turn takes them
    all, not one a turn (uvloop's own accept, which left them queued for seconds)."""
    loop = serving.new_event_loop()
    clients: list[socket.socket] = []
    try:
        if sock_given:  # as uvicorn's workers pass it: bound, not yet listening
            listening = socket.socket()
            listening.bind(("127.0.0.1", 0))
            server = loop.run_until_complete(
                loop.create_server(_Counted, sock=listening, backlog=64)
            )
        else:
            server = loop.run_until_complete(
                loop.create_server(_Counted, "127.0.0.1", 0, backlog=64)
            )
        port = server.sockets[0].getsockname()[1]
        _Counted.made = []
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
        _turns(loop, 3)  # one to accept them, one for each to be handed over, one to spare
        assert len(_Counted.made) == 40
        for transport in _Counted.made:
            transport.close()
        server.close()
        loop.run_until_complete(server.wait_closed())
        _turns(loop, 2)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1)
    finally:
        for client in clients:
            client.close()
        loop.close()


def test_accepting_pauses_for_a_moment_when_the_host_is_out_of_descriptors(monkeypatch):
    loop = serving.new_event_loop()
    try:
        server = loop.run_until_complete(loop.create_server(_Counted, "127.0.0.1", 0))
        listening = server.sockets[0]
        client = socket.create_connection(("127.0.0.1", listening.getsockname()[1]))

        class OutOfDescriptors(socket.socket):
            def accept(self) -> tuple[socket.socket, object]:
                raise OSError(errno.EMFILE, "Too many open files")

        monkeypatch.setattr(serving, "_RETRY_AFTER_S", 0.2)
        short = OutOfDescriptors(
            listening.family, listening.type, fileno=os.dup(listening.fileno())
        )
        _Counted.made = []
        server._accept(short)  # what the loop calls when the socket is ready
        assert not server.is_serving()  # not spinning on a socket that stays ready
        _turns(loop, 3)
        assert _Counted.made == []
        loop.run_until_complete(asyncio.sleep(0.3))
        _turns(loop, 3)
        assert server.is_serving() and len(_Counted.made) == 1  # serving again by itself
        short.close()
        client.close()
        for transport in _Counted.made:
            transport.close()
        server.close()
        _turns(loop, 2)  # the transports' closing done before the loop's
    finally:
        loop.close()


def test_ranklab_serve_runs_on_the_fair_accepting_loop(monkeypatch, sqlite_url):
    seen: dict[str, Any] = {}
    monkeypatch.setattr(embedded, "_run_server", lambda *args, **options: seen.update(options))
    monkeypatch.setattr(embedded, "create_app", lambda settings: object())
    embedded.serve(make_settings(sqlite_url), "127.0.0.1", 0, with_executor=False)
    assert seen["loop"] == serving.LOOP
    loop = uvicorn.Config(app=object(), loop=seen["loop"]).get_loop_factory()()
    assert type(loop).__name__ == "FairAcceptLoop"
    loop.close()

"""bench/class_client.py, the load tool's browser: what it sends and reads must be what a browser
sends and reads, or `make bench-class` miscounts. Against uvicorn on a real loopback socket (as
`ranklab serve` runs it: httptools, uvloop), a small ASGI app for each way a response can come,
then the real app: learners through the class flow on this client and on httpx, seen alike."""

from __future__ import annotations

import asyncio
import json
import random
import zlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from app.config import ROOT
from app.main import create_app
from bench import bench_class
from bench.class_client import Browser, ProtocolError
from tests.conftest import make_settings
from tests.support.live import serving

LOOPS = ["uvloop", "asyncio"]


async def _body(receive: Callable[[], Awaitable[dict[str, Any]]]) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


class Site:
    """An ASGI app with one path for each way of answering; it records what it was sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.busy_left = 1

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = {name.decode(): value.decode() for name, value in scope["headers"]}
        seen = {
            "method": scope["method"],
            "path": scope["path"],
            "port": scope["client"][1],  # the client's port: one per connection
            "cookie": headers.get("cookie", ""),
            "content-type": headers.get("content-type", ""),
            "body": (await _body(receive)).decode(),
        }
        self.sent.append(seen)
        path = scope["path"]
        status, extra, body = 200, [], json.dumps(seen).encode()
        if path == "/set":
            extra = [
                ("set-cookie", "plain=1; HttpOnly; Path=/; SameSite=lax"),
                ("set-cookie", "narrow=2; Path=/only"),
                ("set-cookie", "secure=3; Path=/; Secure"),
            ]
        elif path == "/forget":
            extra = [("set-cookie", 'plain=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0')]
        elif path == "/see-other":
            status, extra, body = 303, [("location", "/echo")], b""
        elif path == "/close":
            extra = [("connection", "close")]
        elif path == "/gzip":
            extra = [("content-encoding", "gzip")]
            body = zlib.compress(body, wbits=16 + zlib.MAX_WBITS)
        elif path == "/slow":
            await asyncio.sleep(0.6)
        elif path == "/answer" and self.busy_left:
            self.busy_left -= 1
            status, extra = 503, [("retry-after", "0")]
            body = (
                b'<p data-testid="error-message">Busy</p><form id="busy-retry" method="post" '
                b'action="/answer"><input type="hidden" name="submission" value="t&amp;1">'
                b'<input type="hidden" name="arrived" value="stamp"></form>'
            )
        elif path == "/answer":
            status, extra, body = 303, [("location", "/echo")], b""
        if path == "/chunked":  # no Content-Length: uvicorn sends it chunked
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for part in (b"first,", b"", b"second," * 5000, b"third"):
                await send({"type": "http.response.body", "body": part, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        extra.append(("content-length", str(len(body))))
        raw = [(name.encode(), value.encode()) for name, value in extra]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[Site, str]]:
    app = Site()
    with serving(app) as url:
        yield app, url


def run(main: Awaitable[Any], loop: str) -> Any:
    async def whole() -> Any:
        return await main

    return bench_class.run_loop(whole(), loop)  # type: ignore[arg-type]


def _json(response: Any) -> dict[str, Any]:
    assert response.status == 200, response.body[:200]
    return json.loads(response.body)


@pytest.mark.parametrize("loop", LOOPS)
def test_cookies_are_kept_sent_by_path_and_deleted_as_a_browser_does(site, loop):
    _, url = site

    async def main() -> list[str]:
        browser = Browser(url, timeout=10)
        try:
            await browser.get("/set")
            cookies = [_json(await browser.get("/echo"))["cookie"]]
            cookies.append(_json(await browser.get("/only/deeper"))["cookie"])
            cookies.append(_json(await browser.get("/onlyness"))["cookie"])
            await browser.get("/forget")
            cookies.append(_json(await browser.get("/echo"))["cookie"])
            return cookies
        finally:
            await browser.aclose()

    top, inside, beside, forgotten = run(main(), loop)
    # The Secure cookie is never sent over plain http; the /only one only under /only/.
    assert top == "plain=1"
    assert inside == "plain=1; narrow=2"
    assert beside == "plain=1"
    assert forgotten == ""


@pytest.mark.parametrize("loop", LOOPS)
def test_one_keep_alive_connection_until_idle_then_a_new_one(site, loop):
    _, url = site

    async def main() -> tuple[list[int], int]:
        browser = Browser(url, timeout=10, idle_s=0.3)
        try:
            ports = [_json(await browser.get("/echo"))["port"] for _ in range(3)]
            ports.append(_json(await browser.post("/echo", {"a": "1"}))["port"])
            await asyncio.sleep(0.5)  # longer than idle_s: dropped, as the browser would
            ports.append(_json(await browser.get("/echo"))["port"])
            return ports, browser.connections
        finally:
            await browser.aclose()

    ports, opened = run(main(), loop)
    assert len(set(ports[:4])) == 1 and ports[4] != ports[0]
    assert opened == 2


@pytest.mark.parametrize("loop", LOOPS)
def test_a_redirect_is_returned_and_followed_as_a_request_of_its_own(site, loop):
    _, url = site

    async def main() -> tuple[int, str, dict[str, Any]]:
        browser = Browser(url, timeout=10)
        try:
            moved = await browser.get("/see-other")
            followed = _json(await browser.get(moved.headers["location"]))
            return moved.status, moved.headers["location"], followed
        finally:
            await browser.aclose()

    status, location, followed = run(main(), loop)
    assert (status, location) == (303, "/echo")
    assert followed["path"] == "/echo" and followed["method"] == "GET"


@pytest.mark.parametrize("loop", LOOPS)
def test_chunked_and_gzip_bodies_are_read_whole_and_the_connection_stays_usable(site, loop):
    _, url = site

    async def main() -> tuple[bytes, dict[str, Any], dict[str, Any], int]:
        browser = Browser(url, timeout=10)
        try:
            chunked = await browser.get("/chunked")
            assert chunked.headers.get("transfer-encoding") == "chunked"
            assert "content-length" not in chunked.headers
            unzipped = _json(await browser.get("/gzip"))
            after = _json(await browser.get("/echo"))
            return chunked.body, unzipped, after, browser.connections
        finally:
            await browser.aclose()

    body, unzipped, after, opened = run(main(), loop)
    assert body == b"first," + b"second," * 5000 + b"third"
    assert unzipped["path"] == "/gzip"
    assert after["path"] == "/echo" and opened == 1


@pytest.mark.parametrize("loop", LOOPS)
def test_a_form_is_sent_as_a_browser_encodes_it(site, loop):
    _, url = site

    async def main() -> dict[str, Any]:
        browser = Browser(url, timeout=10)
        try:
            return _json(await browser.post("/echo", {"csrf": "a b&c", "pick": ["x", "y"]}))
        finally:
            await browser.aclose()

    seen = run(main(), loop)
    assert seen["method"] == "POST"
    assert seen["content-type"] == "application/x-www-form-urlencoded"
    assert seen["body"] == "csrf=a+b%26c&pick=x&pick=y"


@pytest.mark.parametrize("loop", LOOPS)
def test_connection_close_and_a_server_closed_idle_connection_mean_a_new_connection(loop):
    async def main(url: str) -> tuple[list[int], int]:
        browser = Browser(url, timeout=10, idle_s=60)
        try:
            ports = [_json(await browser.get("/close"))["port"]]
            ports.append(_json(await browser.get("/echo"))["port"])
            await asyncio.sleep(2.5)  # the server's keep-alive (1 s) ends; the client's has not
            ports.append(_json(await browser.get("/echo"))["port"])
            return ports, browser.connections
        finally:
            await browser.aclose()

    with serving(Site(), keep_alive_s=1) as url:
        ports, opened = run(main(url), loop)
    assert len(set(ports)) == 3 and opened == 3


@pytest.mark.parametrize("loop", LOOPS)
def test_the_time_out_ends_a_request_and_the_next_one_works(site, loop):
    _, url = site

    async def main() -> tuple[type[BaseException] | None, dict[str, Any], float]:
        browser = Browser(url, timeout=0.2)
        failed: type[BaseException] | None = None
        try:
            try:
                await browser.get("/slow")
            except (TimeoutError, ProtocolError) as error:
                failed = type(error)
            browser.timeout = 10
            after = _json(await browser.get("/echo"))
            timed = await browser.get("/slow")  # 0.6 s on the server: all of it is timed
            return failed, after, timed.elapsed
        finally:
            await browser.aclose()

    failed, after, elapsed = run(main(), loop)
    assert failed is TimeoutError
    assert after["path"] == "/echo"
    # All of the server's 0.6 s is in it; libuv counts its timers in whole milliseconds of a
    # time it reads once a turn, so the sleep may end up to 1 ms early by the client's clock.
    assert elapsed >= 0.599 - 0.001


@pytest.mark.parametrize("client", sorted(bench_class.CLIENTS))
def test_a_503_is_sent_again_after_retry_after_with_the_busy_pages_fields(client):
    app = Site()

    async def main(url: str) -> bench_class.Tally:
        tally = bench_class.Tally()
        browser = bench_class.CLIENTS[client](url, 10)
        learner = bench_class.Learner(browser, tally, random.Random(1))
        try:
            sent = await learner.request("answer", "POST", "/answer", submission="t&1", choice="b")
            assert sent.status == 303 and sent.headers["location"] == "/echo"
        finally:
            await browser.aclose()
        return tally

    with serving(app) as url:
        tally = run(main(url), "uvloop")
    first, again = app.sent
    assert first["body"] == "submission=t%261&choice=b"
    # The busy page's own form, sent again: its fields (its stamp too), not the first ones.
    assert again["body"] == "submission=t%261&arrived=stamp"
    assert tally.busy == 1 and len(tally.latencies["answer"]) == 2 and not tally.errors


@pytest.fixture(scope="module")
def class_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The real app (the real catalog: the benchmark's set) on a real socket, SQLite."""
    from app import migrations

    database_url = f"sqlite:///{tmp_path_factory.mktemp('class') / 'class.db'}"
    migrations.upgrade(database_url)
    app = create_app(make_settings(database_url, challenges_dir=ROOT / "challenges"))
    with serving(app) as url:
        yield url, database_url


def test_learners_go_through_the_class_flow_on_this_client_as_on_httpx(class_site, monkeypatch):
    url, database_url = class_site
    monkeypatch.setattr(bench_class, "THINK_S", (0.0, 0.02))  # the flow, not the waiting
    monkeypatch.setattr(bench_class, "START_SPREAD_S", 0.2)
    answers = bench_class.set_answers()
    seen = {}
    for client in ("lean", "httpx"):
        before = bench_class.stored_answers(database_url)
        tally = run(bench_class.run_class(url, 3, 26, answers, client), "uvloop")
        stored = bench_class.stored_answers(database_url) - before
        assert not tally.errors and not tally.timeouts and tally.finished == 3
        assert tally.acknowledged == stored > 3 * len(answers)
        seen[client] = {kind: len(values) for kind, values in tally.latencies.items()}
        if client == "lean":  # one connection each: no think time outlasts the keep-alive
            assert tally.connections == 3
    # The same seed, so the same choices: the same requests of each kind on both clients.
    assert seen["lean"] == seen["httpx"]
    assert seen["lean"]["answer"] > 3 * len(answers) and seen["lean"]["results"] == 3

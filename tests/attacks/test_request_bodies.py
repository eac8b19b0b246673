"""attack: a client sends a request's headers and holds back, drips or inflates its body.
Headers at once and an answer's body after the countdown were judged on time; a 300 MiB POST
was read whole before any check (the app grew from 151 to 743 MiB).
expect: an answer is judged when its body is complete (409 "Time is up"); a body declared or
counted over its route's limit gets 413 before it is read; one that stalls gets 408.
Real uvicorn servers on loopback, raw sockets; the fake clock moves time for the judging."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx

from tests.support.learner import Learner
from tests.support.live import serving
from tests.support.waiting import wait_for

REPLY_WAIT_S = 20  # a reply later than this never came (the server waits for the body)


@contextmanager
def raw_connection(url: str) -> Iterator[socket.socket]:
    """A plain TCP connection to the live server."""
    address = urlsplit(url)
    sock = socket.create_connection((address.hostname, address.port), timeout=REPLY_WAIT_S)
    try:
        yield sock
    finally:
        sock.close()


def head(url: str, path: str, headers: dict[str, str]) -> bytes:
    """A POST's request line and headers (the connection closes after the reply)."""
    lines = [f"POST {path} HTTP/1.1", f"Host: {urlsplit(url).netloc}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def reply(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (socket timeout: none came)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def cookie_header(client: httpx.Client) -> str:
    """The browser's cookies, as a Cookie header."""
    return "; ".join(f"{name}={value}" for name, value in client.cookies.items())


class FirstRead:
    """The app wrapped: `reading` is set once the app first asks for the body of a request to
    a path ending with `suffix`."""

    def __init__(self, app: Any, suffix: str) -> None:
        self.app, self.suffix = app, suffix
        self.reading = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith(self.suffix):
            await self.app(scope, receive, send)
            return

        async def watched() -> Any:
            self.reading.set()
            return await receive()

        await self.app(scope, watched, send)


def test_an_answer_whose_body_arrives_after_the_deadline_is_late(app_factory, sqlite_url, clock):
    watched = FirstRead(app_factory(sqlite_url), "/q/1/answer")
    with serving(watched) as url:
        learner = Learner(httpx.Client(base_url=url, follow_redirects=True))  # type: ignore[arg-type]
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        learner.get(f"{attempt}/q/1")
        body = urlencode({"csrf_token": learner.csrf, "choice": "B"}).encode()
        with raw_connection(url) as sock:
            form = {
                "Cookie": cookie_header(learner.client),  # type: ignore[arg-type]
                "Content-Type": "application/x-www-form-urlencoded",
                "Content-Length": str(len(body)),
            }
            sock.sendall(head(url, f"{attempt}/q/1/answer", form) + body[:5])
            wait_for(watched.reading.is_set, timeout_s=REPLY_WAIT_S, what="the body read")
            clock.advance(60 + 3 + 1)  # past the limit and its grace, while the body is held
            sock.sendall(body[5:])
            answered = reply(sock)
        learner.client.close()
    assert answered.startswith(b"HTTP/1.1 409"), answered[:200]
    assert b"Time is up" in answered


def test_a_body_that_stops_arriving_is_refused_with_408(app_factory, sqlite_url):
    app = app_factory(sqlite_url, body_idle_s=0.5)
    with serving(app) as url, raw_connection(url) as sock:
        sock.sendall(
            head(
                url,
                "/login",
                {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": "100"},
            )
            + b"username=a"
        )
        answered = reply(sock)
    assert answered.startswith(b"HTTP/1.1 408"), answered[:200]
    assert b"did not arrive in time" in answered


def test_a_body_dripped_a_byte_at_a_time_is_refused_once_its_time_is_up(app_factory, sqlite_url):
    # Never idle for long enough (30 s, beyond the reply's wait): only the total bound can end it.
    app = app_factory(sqlite_url, body_idle_s=30, body_timeout_s=2)
    with serving(app) as url, raw_connection(url) as sock:
        form = {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": "1000"}
        sock.sendall(head(url, "/login", form))
        for _ in range(5):  # a few bytes well within the bound, then no more (a byte sent
            sock.sendall(b"x")  # after the refusal would reset the connection under its reply)
            time.sleep(0.1)
        answered = reply(sock)
    assert answered.startswith(b"HTTP/1.1 408"), answered[:200]


def test_a_body_declared_at_300_mib_is_refused_before_it_is_read(app_factory, sqlite_url):
    app = app_factory(sqlite_url)
    with serving(app) as url:
        # A form route, a FastAPI form, the lab's code route (its larger limit) and no route.
        for path in ("/sets/test-basics/start", "/login", "/labs/lab/steps/one/runs", "/nowhere"):
            with raw_connection(url) as sock:
                sock.sendall(
                    head(
                        url,
                        path,
                        {
                            "Content-Type": "application/x-www-form-urlencoded",
                            "Content-Length": str(300 * 1024 * 1024),
                        },
                    )
                    + b"a="
                    + b"x" * 4096
                )
                answered = reply(sock)
            if path == "/nowhere":  # nothing reads it: the 404, and the body was never read
                assert answered.startswith(b"HTTP/1.1 404"), answered[:200]
            else:
                assert answered.startswith(b"HTTP/1.1 413"), (path, answered[:200])
                assert b"too large" in answered


def test_a_chunked_body_is_counted_and_refused_past_the_limit(app_factory, sqlite_url):
    app = app_factory(sqlite_url)  # forms: 64 KiB
    limit = app.state.settings.form_max_bytes
    with serving(app) as url, raw_connection(url) as sock:
        sock.sendall(
            head(
                url,
                "/login",
                {
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Transfer-Encoding": "chunked",
                },
            )
        )
        piece = b"x" * 16384
        for _ in range(limit // len(piece)):
            sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        sock.sendall(b"1\r\nx\r\n")  # one byte over, and no last chunk: the body never ends
        answered = reply(sock)
    assert answered.startswith(b"HTTP/1.1 413"), answered[:200]


def test_a_lab_run_of_the_longest_code_is_not_refused_for_its_size(app_factory, sqlite_url):
    app = app_factory(sqlite_url)
    settings = app.state.settings
    longest = "é" * settings.lab_code_max_chars  # 9 bytes each once percent-encoded
    body = urlencode({"csrf_token": "x", "code": longest}).encode()
    assert len(body) > settings.form_max_bytes
    with serving(app) as url, httpx.Client(base_url=url) as client:
        response = client.post(
            "/labs/lab/steps/one/runs",
            content=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    assert response.status_code == 403  # read whole, then its CSRF token refused

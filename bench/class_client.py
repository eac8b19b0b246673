"""A learner's browser for the load tool: a small HTTP/1.1 client on an asyncio protocol.

Why: on httpx the load tool cost as much CPU per request as the server (about 2.3 ms), on the
same 2 cores, so its own work queued the server's and inflated the latencies it measured. Here
a request is one write and one future, the response is parsed from a bytearray as it arrives,
and nothing else is built.

What it does, as a browser does for these pages: one keep-alive connection per learner, dropped
when idle for longer than `idle_s` (1.5 s, as the httpx client was set: well before uvicorn's
5 s keep-alive ends it) or when the server closed it, and opened again for the next request;
the learner's cookies (Path honoured, Max-Age=0 or a past Expires deletes, Secure ones only
over https, which this never is); no redirects followed by itself (the caller follows Location
as a request of its own); bodies by Content-Length, chunked, or up to the connection's close;
gzip and deflate bodies decoded; `timeout` seconds at most per request, connecting included.

Each response carries how long its request took: from just before the connection was opened
(when one was needed) or the bytes were written, to when its last byte arrived (stamped by the
protocol as it reads it, not when the learner's coroutine next runs).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import cast
from urllib.parse import urlencode, urlsplit

_HEAD_LIMIT = 64 * 1024  # a response head longer than this is not one of ours
_CHUNKED, _TO_CLOSE = -1, -2  # how the body ends, where there is no Content-Length
_NO_BODY = frozenset({204, 304})


class ProtocolError(Exception):
    """The server's bytes were not a response this client understands, or stopped short."""


class Response:
    """One response: status, headers (names lower-cased, repeats joined by ", " as httpx
    does), the body, and how long the request took (seconds)."""

    __slots__ = ("body", "elapsed", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, elapsed: float) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.elapsed = elapsed

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class _Connection(asyncio.Protocol):
    """One TCP connection: reads a response at a time into a bytearray, completing `waiter`."""

    def __init__(self, cookies: CookieJar) -> None:
        self.cookies = cookies
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.began = 0.0
        self._status = 0
        self._headers: dict[str, str] = {}
        self._length: int | None = None  # None: the head is not read yet
        self._keep = True
        self._chunk_at = 0
        self._chunks = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is not None and not self.waiter.done():
            try:
                self._advance()
            except (ProtocolError, ValueError, zlib.error) as error:
                self._fail(ProtocolError(f"unreadable response: {error}"))

    def eof_received(self) -> bool:
        self._ended()
        return False  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended()

    def send(self, data: bytes, waiter: asyncio.Future[Response], began: float) -> None:
        assert self.transport is not None
        self.waiter, self.began = waiter, began
        self._length = None
        self.transport.write(data)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _ended(self) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self._length == _TO_CLOSE:
            self._finish(bytes(self.buffer))
        else:
            self._fail(ProtocolError("the server closed the connection before the response ended"))

    def _advance(self) -> None:
        buffer = self.buffer
        if self._length is None:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > _HEAD_LIMIT:
                    raise ProtocolError("response head too long")
                return
            self._read_head(bytes(buffer[:end]))
            del buffer[: end + 4]
        length = self._length
        if length is None:  # not reachable: _read_head sets it
            return
        if length >= 0:
            if len(buffer) >= length:
                body = bytes(buffer[:length])
                del buffer[:length]
                self._finish(body)
        elif length == _CHUNKED:
            self._dechunk()

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        version, _, rest = lines[0].partition(b" ")
        if not version.startswith(b"HTTP/1."):
            raise ProtocolError(f"not an HTTP/1 response: {lines[0][:40]!r}")
        self._status = status = int(rest[:3])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                raise ProtocolError(f"a header line without a colon: {line[:40]!r}")
            key, text = name.strip().lower().decode("latin-1"), value.strip().decode("latin-1")
            if key == "set-cookie":
                self.cookies.take(text)
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self._headers = headers
        connection = headers.get("connection", "").lower()
        self._keep = "close" not in connection and (
            version != b"HTTP/1.0" or "keep-alive" in connection
        )
        if status in _NO_BODY or 100 <= status < 200:
            self._length = 0
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self._length, self._chunk_at = _CHUNKED, 0
            self._chunks.clear()
        elif "content-length" in headers:
            self._length = int(headers["content-length"])
        else:
            self._length, self._keep = _TO_CLOSE, False

    def _dechunk(self) -> None:
        buffer, at = self.buffer, self._chunk_at
        while True:
            line_end = buffer.find(b"\r\n", at)
            if line_end < 0:
                break
            size = int(bytes(buffer[at:line_end]).split(b";", 1)[0], 16)
            if size == 0:  # the last chunk, then trailers (ignored) up to an empty line
                end = buffer.find(b"\r\n\r\n", line_end)
                if end < 0:
                    break
                body = bytes(self._chunks)
                del buffer[: end + 4]
                self._finish(body)
                return
            data_end = line_end + 2 + size
            if len(buffer) < data_end + 2:
                break
            self._chunks += buffer[line_end + 2 : data_end]
            at = data_end + 2
        self._chunk_at = at

    def _finish(self, body: bytes) -> None:
        finished = time.perf_counter()
        coding = self._headers.get("content-encoding", "").lower()
        if coding == "gzip":
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            body = zlib.decompress(body)
        if not self._keep or self.buffer:  # bytes beyond this response: nothing asked for them
            self.close()
        waiter, self.waiter = self.waiter, None
        assert waiter is not None
        waiter.set_result(Response(self._status, self._headers, body, finished - self.began))

    def _fail(self, error: Exception) -> None:
        self.close()
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)


class CookieJar:
    """One learner's cookies: name → (value, path), and the Cookie header for a path."""

    def __init__(self, secure: bool) -> None:
        self.secure = secure
        self.cookies: dict[str, tuple[str, str]] = {}

    def take(self, header: str) -> None:
        """Store (or delete) what one Set-Cookie header says."""
        pair, *attributes = header.split(";")
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals or not name:
            return  # a browser ignores a cookie without a name=value pair
        path, expired, secure_only = "/", False, False
        for attribute in attributes:
            key, _, setting = attribute.partition("=")
            key, setting = key.strip().lower(), setting.strip()
            if key == "path" and setting.startswith("/"):
                path = setting
            elif key == "max-age":
                expired = int(setting) <= 0
            elif key == "expires":
                when = email.utils.parsedate_to_datetime(setting)
                expired = expired or when.timestamp() <= time.time()
            elif key == "secure":
                secure_only = True
        if expired:
            self.cookies.pop(name, None)
        elif not secure_only or self.secure:
            self.cookies[name] = (value.strip(), path)

    def header(self, path: str) -> str:
        """The Cookie header's value for a request to `path` ("" for none)."""
        return "; ".join(
            f"{name}={value}"
            for name, (value, prefix) in self.cookies.items()
            if path == prefix or path.startswith(prefix if prefix.endswith("/") else prefix + "/")
        )


Form = Mapping[str, str | Sequence[str]]


class Browser:
    """One learner's browser on one server: `get` and `post` return the Response as it came
    (a redirect too), raise TimeoutError past `timeout`, and ProtocolError or OSError where the
    connection failed."""

    def __init__(self, url: str, timeout: float, idle_s: float = 1.5) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"plain http://host:port only, not {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout, self.idle_s = timeout, idle_s
        self.cookies = CookieJar(secure=False)
        self.connections = 0  # opened so far: keep-alive is seen working when this stays low
        # What every request says, as httpx says it (the server sees the same requests).
        self._fixed = (
            f"Host: {parts.netloc}\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\n"
            "Connection: keep-alive\r\nUser-Agent: ranklab-bench\r\n"
        ).encode("latin-1")
        self._connection: _Connection | None = None
        self._idle_since = 0.0

    async def get(self, path: str) -> Response:
        return await self._request(b"GET", path, b"")

    async def post(self, path: str, form: Form) -> Response:
        return await self._request(b"POST", path, urlencode(form, doseq=True).encode("ascii"))

    async def aclose(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _request(self, method: bytes, path: str, body: bytes) -> Response:
        if "://" in path:  # an absolute Location: this client talks to one server only
            parts = urlsplit(path)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
        loop = asyncio.get_running_loop()
        began = time.perf_counter()
        async with asyncio.timeout(self.timeout):
            connection = self._connection
            if (
                connection is None
                or connection.closed
                or connection.buffer
                or began - self._idle_since > self.idle_s
            ):
                if connection is not None:
                    connection.close()
                self._connection = None
                jar = self.cookies
                _, connection = await loop.create_connection(
                    lambda: _Connection(jar), self.host, self.port
                )
                self.connections += 1
                self._connection = connection
            head = [method, b" ", path.encode("ascii"), b" HTTP/1.1\r\n", self._fixed]
            cookie = self.cookies.header(path.partition("?")[0])
            if cookie:
                head.append(f"Cookie: {cookie}\r\n".encode("latin-1"))
            if method == b"POST":
                head.append(
                    b"Content-Type: application/x-www-form-urlencoded\r\n"
                    b"Content-Length: %d\r\n" % len(body)
                )
            head += (b"\r\n", body)
            waiter: asyncio.Future[Response] = loop.create_future()
            connection.send(b"".join(head), waiter, began)
            try:
                response = await waiter
            except BaseException:
                connection.close()  # a time-out or failure mid-response: this connection is done
                self._connection = None
                raise
        self._idle_since = time.perf_counter()
        return response

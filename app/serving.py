"""The server's event loop: uvloop, with every waiting connection accepted at each turn.

Measured with `make bench-class` (500 learners on one worker, docs/benchmarks.md): uvloop
accepted only a few new connections per turn of its loop (`strace`: one `accept4` a turn, never
an `EAGAIN`; 11 of 40 waiting ones in three turns of an idle loop). While the loop was busy
serving the open connections (turns of tens of milliseconds), the connections a class opened (a
learner's first page, an answer sent after a long thought, once the browser had dropped its idle
connection) waited in the listening socket's queue: 150 to 200 of them at any moment for 20 s,
each for 2 to 3 s, while requests on open connections were answered in under 100 ms. Unfair,
and the p99. asyncio's own loop accepts all that wait, but costs more CPU for every request.

So the app keeps uvloop's transports and accepts by itself: the listening socket is watched
with `add_reader`, and each time it is ready every connection waiting (up to the backlog) is
accepted and handed to uvloop with `connect_accepted_socket`. A new connection then waits for
one turn of the loop, as a request on an open one does: first come, first served.

Used as uvicorn's loop (`loop="app.serving:new_event_loop"`); without uvloop (not a
Linux or macOS host) it is asyncio's own loop, which accepts fairly already.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("ranklab.serving")

LOOP = "app.serving:new_event_loop"  # uvicorn's `loop` option for this module's loop

# accept(2) errors that say the host is short of something for a while (descriptors, memory):
# stop accepting for a moment instead of spinning on a socket that stays readable.
_SHORT_OF = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_RETRY_AFTER_S = 1.0  # asyncio's own pause after such an error


class _Listener:
    """What uvicorn needs of a server (`sockets`, `close`, `wait_closed`) for sockets this
    module accepts on; each connection gets the protocol of `factory`."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        factory: Callable[[], Any],
        sockets: list[socket.socket],
        backlog: int,
    ) -> None:
        self._loop = loop
        self._factory = factory
        self.sockets = sockets
        self._backlog = backlog
        self._serving = False
        self._pending: set[asyncio.Task[Any]] = set()
        for sock in sockets:
            sock.setblocking(False)
            sock.listen(backlog)
        self._start()

    def _start(self) -> None:
        if self._serving or not self.sockets:
            return
        self._serving = True
        for sock in self.sockets:
            self._loop.add_reader(sock.fileno(), self._accept, sock)

    def _pause(self) -> None:
        if self._serving:
            self._serving = False
            for sock in self.sockets:
                self._loop.remove_reader(sock.fileno())

    def _accept(self, listening: socket.socket) -> None:
        for _ in range(self._backlog):
            try:
                connection, _address = listening.accept()
            except (BlockingIOError, InterruptedError):
                return  # none left waiting
            except ConnectionAbortedError:
                continue  # the client gave up before it was accepted
            except OSError as error:
                if error.errno not in _SHORT_OF:
                    raise
                logger.error("accepting connections paused for %.0f s: %s", _RETRY_AFTER_S, error)
                self._pause()
                self._loop.call_later(_RETRY_AFTER_S, self._start)
                return
            self._hand_over(connection)

    def _hand_over(self, connection: socket.socket) -> None:
        connection.setblocking(False)
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio does
        task = self._loop.create_task(self._loop.connect_accepted_socket(self._factory, connection))
        self._pending.add(task)
        task.add_done_callback(self._handed_over)

    def _handed_over(self, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("a new connection failed: %s", task.exception())

    def is_serving(self) -> bool:
        return self._serving

    def close(self) -> None:
        """Stop accepting and close the listening sockets; open connections are left to the
        server's shutdown."""
        self._pause()
        for sock in self.sockets:
            sock.close()
        self.sockets = []

    async def wait_closed(self) -> None:
        for task in list(self._pending):
            task.cancel()


def _listening_sockets(host: str | None, port: int | None) -> list[socket.socket]:
    """Bound sockets for host:port, as asyncio's create_server makes them."""
    infos = socket.getaddrinfo(host, port or 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    made: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            made.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except BaseException:
        for sock in made:
            sock.close()
        raise
    return made


def _fair_loop_class() -> type[asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None

    class FairAcceptLoop(uvloop.Loop):
        """uvloop whose plain TCP servers accept every waiting connection at each turn."""

        async def create_server(  # type: ignore[override]
            self,
            protocol_factory: Callable[[], Any],
            host: str | None = None,
            port: int | None = None,
            *,
            sock: socket.socket | None = None,
            backlog: int = 100,
            ssl: Any = None,
            **options: Any,
        ) -> Any:
            if ssl is not None or options or (sock is not None and sock.family == socket.AF_UNIX):
                given: dict[str, Any] = {"host": host, "port": port, "sock": sock, "ssl": ssl}
                return await super().create_server(
                    protocol_factory, backlog=backlog, **given, **options
                )
            sockets = [sock] if sock is not None else _listening_sockets(host, port)
            return _Listener(self, protocol_factory, sockets, backlog)

    return FairAcceptLoop


def proxy_options(trusted_proxies: str) -> dict[str, Any]:
    """uvicorn's options for X-Forwarded-For: honoured only from the trusted proxies (the
    RANKLAB_TRUSTED_PROXIES setting). uvicorn's own default trusts 127.0.0.1, so that any
    process on the host could name itself any visitor (and each a log-in limit of its own);
    with none set, the peer's address is the client's."""
    trusted = trusted_proxies.strip()
    if not trusted:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": trusted}


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new loop for the server: uvicorn's `loop` option names it ("module:function")."""
    found = _fair_loop_class()
    return found() if found is not None else asyncio.new_event_loop()

"""A free TCP port on loopback: the one helper the app, the executor and the tests share.

Standard library only: the web app imports it (to place its embedded executor).
"""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port free on `host` right now (free until someone else binds it: the
    caller must cope with losing that race, as the embedded executor's start does)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])

"""How a rank leaves its peers: once none of them is still joining a gloo group, FIN first.

Standard library only: it runs in a rank after its snippet, just before `os._exit`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import sys
import time

# gloo names its threads (torch 2.13, observed): a process group's transport loop, started
# before the group connects its mesh, and the group's workers, started once the mesh is
# connected (ProcessGroupGloo's constructor, after connectFullMesh).
GLOO_TRANSPORT_THREAD = "gloo_tcp_loop"
GLOO_WORKER_THREAD = "pt_gloo_runloop"
# A rank waits no longer than this for its peers: under torchrun a worker's exit (the
# interpreter's teardown with torch loaded) took 1.1-1.9 s at load 6 on 2 cores, and a peer
# that joins no faster than that fails there too.
JOIN_WAIT_S = 2.0
POLL_S = 0.005


def leave(sandboxed: bool) -> None:
    """Wait (bounded) until no peer process is still joining a gloo group, then FIN."""
    if _in_a_group() and joining(os.getpid()) is not None:
        deadline = time.monotonic() + JOIN_WAIT_S
        while _peer_joining(sandboxed) and time.monotonic() < deadline:
            time.sleep(POLL_S)
    end_connections()


def _in_a_group() -> bool:
    """Whether the snippet left its process groups up. destroy_process_group() closes their
    connections at once, under torchrun too: then there is no exit to wait for."""
    distributed = sys.modules.get("torch.distributed")
    try:
        return bool(distributed is not None and distributed.is_initialized())
    except Exception:  # a snippet may have replaced anything in the module
        return True


def joining(pid: int) -> bool | None:
    """Whether process `pid` is connecting a gloo group's mesh (a transport without workers);
    None if it has no gloo transport (or is gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    names: list[str] = []
    for task in tasks:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    transports = names.count(GLOO_TRANSPORT_THREAD)
    if not transports:
        return None
    # Every group has its own transport and at least one worker (two by default). A worker
    # not yet named reads as still joining: the wait is a poll longer, never shorter.
    return names.count(GLOO_WORKER_THREAD) < transports


def _peer_joining(sandboxed: bool) -> bool:
    """Whether a peer of this run is joining a gloo group: in a sandboxed run, any other
    process of the run's pid namespace; in a trusted one, the run's process group."""
    own = os.getpid()
    group = os.getpgid(0)
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == own:
            continue
        pid = int(name)
        with contextlib.suppress(OSError):
            if not sandboxed and os.getpgid(pid) != group:
                continue
            if joining(pid):
                return True
    return False


def end_connections() -> None:
    """Send FIN on every TCP connection the rank still holds, before its exit closes them.

    A socket closed with bytes unread in it resets the connection (RST) instead of closing it,
    and a peer blocked in a collective then reads "Connection reset by peer" where, under
    torchrun, it reads "Connection closed by peer": there a failing worker takes its time to
    exit (traceback, finalisation) while gloo's loop thread drains what peers sent, and here
    os._exit comes at once. A FIN sent first is what the peer reads (end of stream): its
    receive ends in "closed", whatever reset follows on the same connection.
    """
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError, ValueError):
            fd = int(name)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            with socket.socket(fileno=os.dup(fd)) as connection:
                if connection.type == socket.SOCK_STREAM and connection.family in (
                    socket.AF_INET,
                    socket.AF_INET6,
                ):
                    connection.shutdown(socket.SHUT_WR)

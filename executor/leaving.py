"""How a rank leaves its peers: once none of them is still joining a gloo group, FIN first.

Standard library only: it runs in a rank after its snippet, just before `os._exit`, and in
the snippet's destroy_process_group(), before the group's connections close.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import stat
import sys
import time
import types
from typing import Any

# gloo names its threads (torch 2.13, observed): a process group's transport loop, started
# before the group connects its mesh, and the group's workers, started once the mesh is
# connected (ProcessGroupGloo's constructor, after connectFullMesh).
GLOO_TRANSPORT_THREAD = "gloo_tcp_loop"
GLOO_WORKER_THREAD = "pt_gloo_runloop"
GLOO_LEAVING_THREAD = "gloo_tcp_left"  # a transport renamed as its group is destroyed
# A rank waits no longer than this for its peers: under torchrun a worker's exit (the
# interpreter's teardown with torch loaded) took 1.1-1.9 s at load 6 on 2 cores, and a peer
# that joins no faster than that fails there too.
JOIN_WAIT_S = 2.0
POLL_S = 0.005


def leave(sandboxed: bool) -> None:
    """Wait (bounded) until no peer process is still joining a gloo group, then FIN."""
    if _in_a_group():
        _wait_for_joining_peers(sandboxed)
    end_connections()


def _wait_for_joining_peers(sandboxed: bool) -> None:
    """Wait (at most JOIN_WAIT_S) while a peer is joining, if this rank has a gloo group."""
    if joining(os.getpid()) is not None:
        deadline = time.monotonic() + JOIN_WAIT_S
        while _peer_joining(sandboxed) and time.monotonic() < deadline:
            time.sleep(POLL_S)


def wait_before_destroy(sandboxed: bool) -> None:
    """Make the rank's destroy_process_group() first wait (bounded) until no peer is joining.

    It closes the group's connections at once: a peer still connecting its mesh to this rank
    then fails in init_process_group ("connectFullMesh failed ... Connection closed by peer").
    broadcast-from-rank-1 (3 ranks, src=2) did so in 14 of 844 runs at load 16-18 (two runs
    at a time, warm executor), a rank that had received the broadcast destroying while rank 0
    still connected; 2 of 818 with this wait alone, 0 of 1558 once a not yet named thread
    counts as joining (joining()), 0 of 1128 with _mark_leaving too. The race is gloo's, under
    torchrun too, but a snippet's outcome must not depend on it. Called in the rank before the
    snippet runs (torch.distributed is imported by then: the zygote imports it).
    """
    distributed = sys.modules.get("torch.distributed")
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    original = getattr(distributed, "destroy_process_group", None)
    if distributed is None or c10d is None or original is None:
        return

    @functools.wraps(original)
    def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(Exception):  # the wait is a courtesy: never the snippet's error
            _wait_for_joining_peers(sandboxed)
            _mark_leaving()
        return original(*args, **kwargs)

    for module in (distributed, c10d):
        setattr(module, "destroy_process_group", destroy_process_group)  # noqa: B010


def _mark_leaving() -> None:
    """Rename this rank's gloo transport threads: a group being destroyed stops its workers
    before its transport, and would read as joining to a peer's wait meanwhile (each rank's
    destroy then waited on its peers': 3-rank runs took 40-75 ms longer)."""
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            with open(f"/proc/self/task/{task}/comm") as comm:
                if comm.read().strip() != GLOO_TRANSPORT_THREAD:
                    continue
            with open(f"/proc/self/task/{task}/comm", "w") as comm:
                comm.write(GLOO_LEAVING_THREAD)


# The wrapper's code, one object for every wrapper wait_before_destroy makes.
_WRAPPER_CODE = next(
    const
    for const in wait_before_destroy.__code__.co_consts
    if isinstance(const, types.CodeType) and const.co_name == "destroy_process_group"
)


def hide_wrapper(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without wait_before_destroy's frame: an error of destroy_process_group
    shows the frames `python snippet.py` would (the snippet's, then torch's)."""
    head = tb
    while head is not None and head.tb_frame.f_code is _WRAPPER_CODE:
        head = head.tb_next
    link = head
    while link is not None and link.tb_next is not None:
        if link.tb_next.tb_frame.f_code is _WRAPPER_CODE:
            link.tb_next = link.tb_next.tb_next
        else:
            link = link.tb_next
    return head


def _in_a_group() -> bool:
    """Whether the snippet left its process groups up. destroy_process_group() closes their
    connections at once, under torchrun too: then it waited (wait_before_destroy), not the
    exit."""
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
    main = ""  # the process's own name, which a new thread has until it names itself
    for task in tasks:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/comm") as comm:
            name = comm.read().strip()
            if task == str(pid):
                main = name
            else:
                names.append(name)
    transports, workers = names.count(GLOO_TRANSPORT_THREAD), names.count(GLOO_WORKER_THREAD)
    if not transports and not workers and main in names:
        # A transport thread names itself once it runs: under load (16 on 2 cores) a peer
        # was seen in connectFullMesh with its one other thread still unnamed, and read as
        # having no gloo group (broadcast-from-rank-1 then failed in 2 of 818 runs).
        return True
    if not transports:
        return None
    # Every group has its own transport and at least one worker (two by default). A worker
    # not yet named reads as still joining: the wait is a poll longer, never shorter.
    return workers < transports


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

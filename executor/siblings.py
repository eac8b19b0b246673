"""Sibling warm parents: ranks with a hash secret of their own, forked into another slot's cell.

Every fork of one process shares its hash secret (drawn once, when the interpreter starts), so
without siblings a set of strings would iterate in the same order on every rank and on every
run. Under torchrun each rank is a fresh interpreter with its own secret, and that is how real
"ranks issue collectives in a different order" deadlocks happen. The pool therefore starts a few
more zygotes, each a separate interpreter, and every run draws its ranks' parents at random from
the main zygote and its siblings: ranks differ from each other and from run to run.

A sibling keeps one worker per slot, sitting in that slot's cgroups from its start. To stage rank
k of a run, the slot worker sends the worker the run's namespaces (those of the cell's init: pid,
net, mount, ipc, uts), the rank's pipes and an order pipe over a unix socket (SCM_RIGHTS). The
worker forks a child that enters those namespaces and waits there for the rank's order, then
forks the rank into them. The order (the code) goes through the child's own pipe: the worker,
which forks every rank it stages, never holds a request (it refuses one that is not staged).
That child stays outside the run's pid namespace (a process cannot move itself into one), waits
for the rank and tells the cell's init how it ended; the rank dies with the cell like every other
process in that pid namespace. The slot spares the workers (listed in pid files) when it clears
its cgroups.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from executor import identities, prefault, sandbox
from executor import rank as rank_module
from executor.limits import run_budget
from executor.wire import STREAMS

if TYPE_CHECKING:
    from executor.context import ZygoteContext

NAMESPACES = ("net", "ipc", "uts", "pid", "mnt")  # mnt last: after it, paths are the cell's
# The ranks staged ahead of a run (and copying their pages while they wait, prefault.py): those
# of a run of two, the common case. A higher one is staged when a run needs it: staged ahead,
# it would mostly be ended unused as a 2-rank run starts, and the run's snippets may not start
# before a spare is gone (init waits for it), nor share the cores with its exit.
STAGED_RANKS = 2
LINGER_S = 120  # the longest a staged child waits, its rank ended, for the cell's init to end
REQUEST_TIMEOUT_S = 5.0
HEADER = struct.Struct("!I")


def socket_path(directory: str, sibling: int, slot: int) -> str:
    """Where sibling `sibling`'s worker for slot `slot` listens."""
    return os.path.join(directory, f"sibling-{sibling}-slot-{slot}.sock")


def worker_pids(socket_paths: list[str]) -> set[int]:
    """The pids of the siblings' workers sitting in a slot's cgroups (the slot must spare them)."""
    pids = set()
    for path in socket_paths:
        with contextlib.suppress(OSError, ValueError):
            pids.add(int(Path(path).with_suffix(".pid").read_text()))
    return pids


def choose_parents(processes: int, siblings: list[int]) -> list[int | None]:
    """Draw each rank's parent: None is the main zygote (the cell's init), else a sibling.

    Parents are distinct while there are enough of them, so no two ranks share a hash secret;
    the draw is random, so a rank's secret also changes from run to run.
    """
    parents = draw_parents(siblings)
    return [parents[index % len(parents)] for index in range(processes)]


def draw_parents(siblings: list[int]) -> list[int | None]:
    """The parents of a run's first ranks, in rank order (rank k: entry k modulo its length).

    Init's own (None) is drawn among the first STAGED_RANKS, which every run of that many
    ranks has: its staged rank, which copies its pages while it waits (prefault.py), is then
    used by every such run rather than ended unused, its copying wasted, as the run starts."""
    draw = random.SystemRandom()
    parents: list[int | None] = list(siblings)
    draw.shuffle(parents)
    parents.insert(draw.randrange(min(STAGED_RANKS, len(parents) + 1)), None)
    return parents


def stage_rank(path: str, init_pid: int, fds: dict[str, int], prefault: bool = False) -> int:
    """Have a sibling's worker fork a child into the staged cell of `init_pid` that waits for
    its rank's order; return where to write the order (closing it unwritten: not needed).

    The fork and the entry into the cell are what make a sibling's rank start later than
    init's own (two forks of a warm parent in all); staged, they happen before the request.
    """
    order_r, order_w = os.pipe()
    try:
        _ask_worker(path, init_pid, {**fds, "order": order_r}, prefault)
    except BaseException:
        os.close(order_w)
        raise
    finally:
        os.close(order_r)
    return order_w


def _ask_worker(path: str, init_pid: int, fds: dict[str, int], prefault: bool = False) -> int:
    """Ask a sibling's worker to stage one rank inside the cell of `init_pid`; return the
    worker's pid. The rank starts once its order is written to the "order" descriptor."""
    namespaces = [os.open(f"/proc/{init_pid}/ns/{name}", os.O_RDONLY) for name in NAMESPACES]
    payload = json.dumps({"staged": True, "prefault": prefault}).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(REQUEST_TIMEOUT_S)
            connection.connect(path)
            names = [name for name in (*STREAMS, "hello", "order", "go") if name in fds]
            passed = namespaces + [fds[name] for name in names]
            socket.send_fds(connection, [HEADER.pack(len(payload))], passed)
            connection.sendall(payload)
            reply = connection.recv(4096)
    except OSError as error:
        raise sandbox.SandboxError(f"the rank's warm parent did not answer: {error}") from error
    finally:
        for fd in namespaces:
            os.close(fd)
    answer = reply.decode("utf-8", "replace")
    if not answer.startswith("ok "):
        raise sandbox.SandboxError(answer or "a warm parent failed")
    return int(answer[3:])


def serve(
    context: ZygoteContext,
    directory: str,
    sibling: int,
    slot_names: list[str],
    on_listening: Callable[[], None] = lambda: None,
) -> None:
    """Keep one worker per slot alive until stdin closes (the service is gone)."""
    listeners = []
    for slot in range(len(slot_names)):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = socket_path(directory, sibling, slot)
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(16)
        listeners.append(listener)
    on_listening()
    workers: dict[int, int] = {}
    parent = os.getpid()
    while True:
        for slot in set(range(len(slot_names))) - set(workers.values()):
            pid = os.fork()
            if pid == 0:
                _worker(listeners[slot], context, slot_names[slot], parent)
            workers[pid] = slot
        ready, _, _ = select.select([sys.stdin], [], [], 0.5)
        if ready:
            for pid in workers:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
            return
        while workers:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            workers.pop(pid, None)


def _worker(
    listener: socket.socket, context: ZygoteContext, slot_name: str, parent: int
) -> NoReturn:
    try:
        sandbox.die_with_parent()
        if os.getppid() != parent:
            os._exit(0)
        # Ranks of one run may come from the same worker: answer each request at once and let
        # the kernel reap the children that wait for the ranks (see _enter_and_fork_rank).
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        if context.plan is not None:
            # The slot's own cgroups: a rank started here counts against its run's limits. The
            # pid file comes first: the slot clears its cgroups after every run, sparing these.
            path = listener.getsockname()
            Path(path).with_suffix(".pid").write_text(str(os.getpid()))
            sandbox.SlotCgroups.for_plan(context.plan, slot_name).join()
        while True:
            connection, _ = listener.accept()
            with connection:
                _handle(connection, context)
    except BaseException:
        traceback.print_exc()
    os._exit(1)


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    connection.settimeout(REQUEST_TIMEOUT_S)
    header, fds, _, _ = socket.recv_fds(connection, HEADER.size, len(NAMESPACES) + 7)
    (length,) = HEADER.unpack(header)
    payload = b""
    while len(payload) < length:
        chunk = connection.recv(length - len(payload))
        if not chunk:
            break
        payload += chunk
    return json.loads(payload), fds


def _handle(connection: socket.socket, context: ZygoteContext) -> None:
    try:
        order, fds = _receive(connection)
    except (OSError, ValueError) as error:
        connection.sendall(f"bad rank request: {error}".encode())
        return
    staging = set(order) == {"staged", "prefault"} and order["staged"] is True
    if len(fds) != len(NAMESPACES) + len(STREAMS) + 3 or not staging:
        for fd in fds:
            os.close(fd)  # an order here would put a run's code in this worker's heap
        connection.sendall(b"bad rank request: a rank is only staged here")
        return
    errors_r, errors_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(errors_r)
        _enter_and_fork_rank(order, fds, context, errors_w)
    os.close(errors_w)
    for fd in fds:
        os.close(fd)
    with os.fdopen(errors_r, "rb") as source:
        problem = source.read().decode("utf-8", "replace")  # EOF: the rank is started
    with contextlib.suppress(OSError):
        connection.sendall(f"ok {os.getpid()}".encode() if not problem else problem.encode()[:4000])


def _enter_and_fork_rank(
    order: dict[str, Any], fds: list[int], context: ZygoteContext, errors_w: int
) -> NoReturn:
    """In a child of the worker: enter the cell's namespaces and fork the rank into them at
    once, where it waits for its order on the order descriptor (_await_order); wait for the
    rank and report how it ended to the cell's init, if it had an order."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the worker's SIG_IGN would reap the rank
        namespaces = dict(zip(NAMESPACES, fds, strict=False))
        stdout, stderr, result, stack, hello, staged, go = fds[len(NAMESPACES) :]
        for name, fd in namespaces.items():
            # pid applies to children only: the rank forked next is inside the cell.
            _setns(fd, name)
            os.close(fd)
        # The rank says here that it took an order: only then does its end concern init.
        ordered_r, ordered_w = os.pipe()
        rank_pid = os.fork()
        if rank_pid == 0:
            os.close(errors_w)
            os.close(ordered_r)
            streams = (stdout, stderr, result, stack, go)
            prefault_pages = bool(order["prefault"])
            _await_order(staged, streams, hello, ordered_w, context, prefault_pages)
        os.close(errors_w)  # in the cell, its rank forked: the staging is answered
        errors_w = -1
        for fd in (staged, stdout, stderr, result, stack, go, ordered_w):
            os.close(fd)
    except BaseException as error:
        if errors_w >= 0:
            os.write(errors_w, f"the rank could not join its run: {error!r}".encode())
        os._exit(70)
    _, wait_status = os.waitpid(rank_pid, 0)
    with os.fdopen(ordered_r, "rb") as ordered:
        rank = ordered.read()
    if rank:
        ended = {"rank": int(rank), "wait": os.waitstatus_to_exitcode(wait_status)}
        with contextlib.suppress(OSError):  # the cell is gone when its deadline killed the rank
            os.write(hello, (json.dumps(ended) + "\n").encode())
    # This process's own exit (a warm parent's fork: a few ms of the kernel's time) waits for
    # the cell's init to end, which is after the run's answer: as the run ends, the cores are
    # the ranks' exits' and init's. The hello pipe reads as broken once init has gone.
    with contextlib.suppress(OSError):
        watch = select.poll()
        watch.register(hello, select.POLLERR)
        watch.poll(LINGER_S * 1000)
    os._exit(0)


def _await_order(
    staged: int,
    streams: tuple[int, int, int, int, int],
    hello: int,
    ordered_w: int,
    context: ZygoteContext,
    prefault_pages: bool,
) -> NoReturn:
    """The staged rank, in the cell: wait for the rank's order, then become that rank."""
    order: dict[str, Any] = {}
    try:
        if prefault_pages:
            prefault.populate(context.hot_pages)  # while staged (prefault.py)
        prepared = rank_module.prepare(context.reseed, context.plan is not None, context.plan)
        with os.fdopen(staged, "rb") as source:
            payload = source.read()
        if not payload:
            os._exit(0)  # the run did not need this rank
        order = json.loads(payload)
        del payload  # its bytes would outlive the order's dict, which the rank clears (rank.py)
        plan = _slot_plan(context.plan, order)
        os.write(ordered_w, str(int(order["rank"])).encode())
        os.close(ordered_w)
        # Init knows its own ranks' pids, not this one's (its pid inside the cell): told
        # before any snippet code runs, so the snippet cannot change it. Init samples the
        # rank's CPU time by it at a time-out (stacks.py).
        started = {"rank": order["rank"], "pid": os.getpid()}
        with contextlib.suppress(OSError):
            os.write(hello, (json.dumps(started) + "\n").encode())
        # Its parent is outside the run (getppid() says 0), so kill(0, ...) would reach the
        # sibling's process group: a session of its own keeps that to the rank itself.
        os.setsid()
        budget = run_budget(
            order["budget_ranks"],
            order["timeout_s"],
            context.limits,
            order["backend"],
            order.get("gpu_count", 0),
        )
        *pipes, go = streams
        launch = rank_module.launch_of(
            order, order["rank"], order["script"], budget, dict(zip(STREAMS, pipes, strict=True)),
            go, plan, context.reseed, context.limits.exception_message_chars,
        )  # fmt: skip
    except BaseException as error:
        if "rank" in order:  # answered: init refuses the run
            failed = {"rank": order["rank"], "setup_error": f"a rank could not start: {error!r}"}
            with contextlib.suppress(OSError):
                os.write(hello, (json.dumps(failed) + "\n").encode())
        os._exit(70)
    os.close(hello)
    rank_module.run_rank(launch, prepared)


def _slot_plan(
    plan: sandbox.SandboxPlan | None, order: dict[str, Any]
) -> sandbox.SandboxPlan | None:
    """The rank runs as its run's slot uid, as the ranks its init forks do (identities.py)."""
    if plan is None:
        return None
    uid = order.get("uid")
    if not isinstance(uid, int) or not identities.in_range(uid):
        raise sandbox.SandboxError(f"the run names no sandbox uid of the range: {uid!r}")
    return dataclasses.replace(plan, uid=uid, gid=uid)


CLONE_FLAGS = {
    "net": 0x40000000,
    "ipc": 0x08000000,
    "uts": 0x04000000,
    "pid": 0x20000000,
    "mnt": 0x00020000,
}
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int, name: str) -> None:
    if _libc.setns(fd, CLONE_FLAGS[name]) != 0:
        raise sandbox.SandboxError(f"setns({name}): {os.strerror(ctypes.get_errno())}")

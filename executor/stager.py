"""The slot's stager: the one process that forks each run's init, and never holds a request.

A slot worker receives every request (the code) and pumps every output event through its own
heap; freed objects keep their bytes, so a run forked from it could read the previous runs'
code and output in its own memory. So before its first request the slot worker forks this
stager, once it sits in the slot's cgroups and holds the slot's uid. The stager only ever hears
"stage" (with the GPUs the cell is for) and answers with a staged cell (wire.StagedCell): it
makes the run's pipes, forks init (in new namespaces when sandboxed), opens init's pidfd and
hands the parent's ends over SCM_RIGHTS, keeping no copy. The code reaches the run only
through init's own request pipe, after the fork.

Invariant: a process that forks processes which run code never holds another run's request data.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import socket
import struct
import traceback
from collections.abc import Sequence
from typing import NoReturn

from executor import run_init, sandbox
from executor.context import ZygoteContext
from executor.gpus import Gpu
from executor.ports import free_port
from executor.wire import RankPipes, StagedCell

# Each sandboxed run has its own network namespace, so any port is free; like torchrun, which
# binds port 0, a run gets a different one from the ephemeral range each time.
EPHEMERAL_PORTS = (32768, 60999)
HEADER = struct.Struct("!I")
STAGE_TIMEOUT_S = 10.0
MAX_FDS = 253  # SCM_MAX_FD: the most descriptors one message may carry


class Stager:
    """The slot worker's handle on its stager process."""

    def __init__(self, pid: int, channel: socket.socket) -> None:
        self.pid = pid
        self.channel = channel

    @classmethod
    def start(
        cls,
        ctx: ZygoteContext,
        plan: sandbox.SandboxPlan | None,
        own_pid_namespace: int,
        close_in_child: Sequence[int] = (),
    ) -> Stager:
        """Fork the stager from the slot worker, before the slot's first request."""
        here, there = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            here.close()
            for fd in close_in_child:  # the slot's listener: the stager takes no request
                with contextlib.suppress(OSError):
                    os.close(fd)
            _serve(there, ctx, plan, own_pid_namespace)
        there.close()
        return cls(pid, here)

    def alive(self) -> bool:
        """Whether the stager process still runs (reaped here if it ended)."""
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        return pid == 0

    def stage(self, gpus: tuple[Gpu, ...] = ()) -> StagedCell:
        """Have the stager fork a run's init for these GPUs; return its staged cell."""
        request = json.dumps({"stage": [gpu.to_dict() for gpu in gpus]}).encode()
        try:
            self.channel.settimeout(STAGE_TIMEOUT_S)
            self.channel.sendall(HEADER.pack(len(request)) + request)
            message, fds, _, _ = socket.recv_fds(self.channel, 65536, MAX_FDS)
        except OSError as error:
            raise sandbox.SandboxError(f"the slot's stager did not answer: {error}") from error
        if not message:
            raise sandbox.SandboxError("the slot's stager has ended")
        answer = json.loads(message)
        if "error" in answer:
            for fd in fds:
                os.close(fd)
            raise sandbox.SandboxError(answer["error"])
        return StagedCell.from_parts(answer, fds)


def _serve(
    channel: socket.socket,
    ctx: ZygoteContext,
    plan: sandbox.SandboxPlan | None,
    own_pid_namespace: int,
) -> NoReturn:
    """The stager's loop: stage a cell per request until the slot worker goes."""
    try:
        sandbox.die_with_parent()  # the slot worker's end is the stager's
        while True:
            _reap()
            if not select.select([channel], [], [], 1.0)[0]:
                continue
            header = channel.recv(HEADER.size, socket.MSG_WAITALL)
            if len(header) < HEADER.size:
                break  # the slot worker is gone
            (length,) = HEADER.unpack(header)
            request = json.loads(channel.recv(length, socket.MSG_WAITALL))
            gpus = tuple(Gpu.from_dict(gpu) for gpu in request["stage"])
            try:
                cell = _stage(ctx, plan, own_pid_namespace, gpus, channel)
            except (OSError, sandbox.SandboxError) as error:
                socket.send_fds(channel, [json.dumps({"error": str(error)}).encode()], [])
                continue
            try:
                socket.send_fds(channel, [json.dumps(cell.header()).encode()], cell.fds())
            finally:
                cell.close()  # the slot worker has them now; none stays here
    except BaseException:
        traceback.print_exc()
    os._exit(0)


def _stage(
    ctx: ZygoteContext,
    plan: sandbox.SandboxPlan | None,
    own_pid_namespace: int,
    gpus: tuple[Gpu, ...],
    channel: socket.socket,
) -> StagedCell:
    """Make the run's pipes and fork its init (pid 1 of new namespaces when sandboxed)."""
    if plan is not None and gpus:
        plan = sandbox.with_gpus(plan, [gpu.minor for gpu in gpus])
    ranks = [RankPipes.open(rank) for rank in range(ctx.limits.max_nproc)]
    status_r, status_w = os.pipe()
    request_r, request_w = os.pipe()
    hello_r, hello_w = os.pipe()
    # Closed by init once the store listens: every rank waits for its end before the snippet.
    go_r, go_w = os.pipe()
    port = random.randint(*EPHEMERAL_PORTS) if plan is not None else free_port()
    if plan is not None:
        sandbox.detach_pid_namespace()  # the init forked next is pid 1 of a new namespace
    pid = os.fork()
    if pid == 0:
        for fd in (status_r, request_w, hello_w, channel.fileno()):
            os.close(fd)
        setup = run_init.InitSetup(
            ctx, plan, gpus, port, status_w, request_r, hello_r, go_r, go_w, ranks
        )
        run_init.become(setup)
    if plan is not None:
        sandbox.restore_pid_namespace(own_pid_namespace)
    # Opened before the stager reaps anything: the pidfd names this init even once it ended.
    pidfd = os.pidfd_open(pid)
    for fd in (status_w, request_r, hello_r, go_w):
        os.close(fd)
    return StagedCell(pid, pidfd, port, status_r, request_w, hello_w, go_r, ranks)


def _reap() -> None:
    """Reap the inits that have ended (their slot worker waits on their pidfds)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return

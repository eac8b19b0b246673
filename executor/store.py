"""The run's rendezvous store process: forked by init while the cell is staged, it hosts the
store on MASTER_PORT once the run's budget arrives, as torchrun's agent does."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket

from executor import sandbox
from executor.limits import RunBudget

# How long init waits for the store process to listen. It must not give up early: a store that
# answers after init stopped waiting finds its channel closed and exits, so ranks that already
# joined it lose their connection ("Connection closed by peer") and the others cannot join. On 2
# loaded cores its start took over 5 s in about 2.5% of 3-rank runs. The run's own deadline
# still bounds the run.
START_S = 60.0


def fork(plan: sandbox.SandboxPlan | None, port: int) -> tuple[int, socket.socket]:
    """Fork the process that will host the run's store; return its pid and init's channel.

    Forking from a warm parent (hundreds of MB mapped) is the dearest step of a run's start:
    10-50 ms on 2 loaded cores. Until the request comes, the process waits, root like init, on
    a channel it shares with init, for the run's budget (or for the channel to close: a run that
    uses no store). It is forked before init reads its order, so it never holds the code.
    """
    here, there = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            here.close()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.dup2(there.fileno(), 3)
            os.closerange(4, 1 << 16)  # nothing of init's (the ranks' pipes) stays open here
            _host(socket.socket(fileno=3), plan, port)
        finally:
            os._exit(0)
    there.close()
    return pid, here


def _host(channel: socket.socket, plan: sandbox.SandboxPlan | None, port: int) -> None:
    """Host the rendezvous store on MASTER_PORT, as torchrun's agent does.

    torchrun tells its workers to join the agent's store (TORCHELASTIC_USE_AGENT_STORE), so
    rank 0 does not create one; a snippet that builds its own store on MASTER_PORT fails
    there, and must fail here too. The store runs as the sandbox's unprivileged user.
    """
    payload = channel.makefile("rb").readline()
    if not payload:
        return  # the run does not use a store
    sandbox.confine_rank(plan, RunBudget(**json.loads(payload)))
    import torch.distributed as dist

    _store = dist.TCPStore("localhost", port, None, True, multi_tenant=True,
                           wait_for_workers=False)  # fmt: skip
    # Keep serving even if init no longer listens: ranks may already be connected, and the pid
    # namespace's end (or init's SIGKILL) is what ends this process.
    with contextlib.suppress(OSError):
        channel.sendall(b"1")
    while True:
        signal.pause()


def begin(channel: socket.socket, budget: RunBudget) -> bool:
    """Have the staged store process start the store with the run's limits (it confines
    itself and listens while init writes the snippet); whether it was told."""
    try:
        channel.sendall(json.dumps(dataclasses.asdict(budget)).encode() + b"\n")
    except OSError:
        return False
    return True


def listening(pid: int, channel: socket.socket, timeout_s: float) -> int | None:
    """Wait until the store process listens; its pid then, or None."""
    try:
        channel.settimeout(min(START_S, timeout_s))
        return pid if channel.recv(1) == b"1" else None
    except OSError:  # TimeoutError included
        return None

"""The run's rendezvous store process: forked by init while the cell is staged, it hosts the
store on MASTER_PORT from then on, as torchrun's agent does, so a request never waits for it."""

from __future__ import annotations

import contextlib
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


def fork(
    plan: sandbox.SandboxPlan | None, port: int, budget: RunBudget
) -> tuple[int, socket.socket]:
    """Fork the process that hosts the run's store and start it; return its pid and init's
    channel, on which it says when it listens.

    Forking from a warm parent (hundreds of MB mapped) is the dearest step of a run's start:
    10-50 ms on 2 loaded cores, and starting the store (confining the process, binding
    MASTER_PORT) took 3-30 ms more (median 20 ms at load 11), both once paid after the request.
    Now both happen while the cell is staged, before init reads its order, so the store never
    holds the code. Its limits cannot wait for the request: it gets those of the largest run
    allowed (`budget`); the run's cgroups and wall deadline bound it as they bound the ranks.
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
            _host(socket.socket(fileno=3), plan, port, budget)
        finally:
            os._exit(0)
    there.close()
    return pid, here


def _host(
    channel: socket.socket, plan: sandbox.SandboxPlan | None, port: int, budget: RunBudget
) -> None:
    """Host the rendezvous store on MASTER_PORT, as torchrun's agent does.

    torchrun tells its workers to join the agent's store (TORCHELASTIC_USE_AGENT_STORE), so
    rank 0 does not create one; a snippet that builds its own store on MASTER_PORT fails
    there, and must fail here too. The store runs as the sandbox's unprivileged user.
    """
    sandbox.confine_rank(plan, budget)
    import torch.distributed as dist

    _store = dist.TCPStore("localhost", port, None, True, multi_tenant=True,
                           wait_for_workers=False)  # fmt: skip
    # Keep serving even if init no longer listens: ranks may already be connected, and the pid
    # namespace's end (or init's SIGKILL) is what ends this process.
    with contextlib.suppress(OSError):
        channel.sendall(b"1")
    while True:
        signal.pause()


def started(pid: int, channel: socket.socket, timeout_s: float) -> int | None:
    """Wait until the staged store listens (it usually has long before the request); its pid,
    or None."""
    try:
        channel.settimeout(min(START_S, timeout_s))
        return pid if channel.recv(1) == b"1" else None
    except OSError:  # TimeoutError included
        return None


def discard(pid: int) -> None:
    """End the staged store unused, and wait until it has: under `python snippet.py` nothing
    listens on any port the snippet might try."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)

"""The run's rendezvous store process: forked by init while the cell is staged, it hosts the
store on MASTER_PORT, as torchrun's agent does, before the request comes."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket

from executor import identities, sandbox
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
    """Fork the process that hosts the run's store; return its pid and init's channel.

    Forked by init while the cell is staged, before init reads its order (so it never holds the
    code), it confines itself at once and listens on MASTER_PORT: the request then finds the
    store up (starting it took 3-6 ms of a 2-rank run's path, more while the ranks start beside
    it). It says so on the channel, which it shares with init.
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
    there, and must fail here too. The store runs unprivileged, with the ranks' allow-list and
    the rlimits of the largest run (the run's cgroups and deadline bound it as they bound the
    ranks), as a uid of its own (identities.store_uid): it listens before any request, so as the
    ranks' uid it would be a process of theirs between runs, and no rank may signal it.
    """
    if plan is not None:
        store_uid = identities.store_uid(plan.uid)
        plan = dataclasses.replace(plan, uid=store_uid, gid=store_uid)
    sandbox.confine_rank(plan, budget)
    import torch.distributed as dist

    _store = dist.TCPStore("localhost", port, None, True, multi_tenant=True,
                           wait_for_workers=False)  # fmt: skip
    with contextlib.suppress(OSError):
        channel.sendall(b"1")
    # Serve until init ends the store (SIGKILL), or ends itself: its end closes the channel.
    # A trusted run has no pid namespace whose end would take this process with it, and a
    # staged cell that never got a request (discarded, or the executor stopping) ends so too.
    with contextlib.suppress(OSError):
        while channel.recv(64):
            pass


def listening(pid: int, channel: socket.socket, timeout_s: float) -> int | None:
    """Wait until the store process listens (it has, unless the request came at once); its pid
    then, or None."""
    try:
        channel.settimeout(min(START_S, timeout_s))
        return pid if channel.recv(1) == b"1" else None
    except OSError:  # TimeoutError included
        return None

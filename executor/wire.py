"""What crosses the pipes between the executor's processes, named in one place.

The process tree (docs/executor.md draws it): the zygote forks a slot worker per slot; each slot
worker forks, before its first request, a stager that only ever hears "stage" and answers with a
staged cell (`StagedCell`: the run's init, its pidfd and the parent ends of the run's pipes);
the run's init forks the store process and a staged rank, gets its order (`RunOrder`, the code
included) through its own request pipe, hands the staged rank its own, says go (the go pipe's
end) and reports on its status pipe (`status_line`). A sibling's staged rank gets its order
through its own order pipe.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, field
from typing import Any

# A rank's pipes, by name: its output, its fd-3 record (records.py), its stack dumps (stacks.py).
STREAMS = ("stdout", "stderr", "result", "stack")
# What the slot worker sends the run's init to have it stop the ranks (init is pid 1 of the
# run's pid namespace: only a signal it handles reaches it from outside) ...
STOP_SIGNAL = signal.SIGUSR1
# ... to have it sample the ranks' CPU time and signal them to dump their stacks (stacks.py) ...
DUMP_REQUEST_SIGNAL = signal.SIGUSR2
# ... and to have it look whether every rank is blocked, for verify's early stop (hangstop.py).
LOOK_REQUEST_SIGNAL = signal.SIGURG
# ... and to have it end the run's store early: every rank has written its record (its snippet has
# ended), so no rank needs the store any more, and its exit overlaps the ranks' own.
END_STORE_SIGNAL = signal.SIGPWR  # (SIGWINCH is a rank's stack dump: stacks.py)
# Inside the sandbox /tmp is the run's private tmpfs, where init writes the snippet.
SANDBOX_SCRIPT_DIR = "/tmp"

# The order the slot worker writes to init's request pipe (and, with "rank", "script",
# "budget_ranks" and "uid" added, to a sibling's staged rank): the only way code reaches a run.
RunOrder = dict[str, Any]


@dataclass
class RankPipes:
    """One rank's pipes: stream name -> (read end, write end)."""

    rank: int
    fds: dict[str, tuple[int, int]]

    @classmethod
    def open(cls, rank: int) -> RankPipes:
        """Create the rank's stdout, stderr, result and stack pipes."""
        return cls(rank, {name: os.pipe() for name in STREAMS})

    def write_ends(self) -> dict[str, int]:
        """Each stream's write end (what a rank, or a sibling staging one, is given)."""
        return {name: write_end for name, (_, write_end) in self.fds.items()}

    def close(self) -> None:
        """Close both ends of every stream."""
        for read_end, write_end in self.fds.values():
            os.close(read_end)
            os.close(write_end)


@dataclass
class StagedCell:
    """A run's init, staged by the stager and handed to the slot worker (over SCM_RIGHTS).

    The slot worker gets the parent's ends: init's status pipe to read, its request pipe to
    write the order to, the hello pipe's write end (siblings' ranks tell init their pid on it),
    and each rank's pipes, both ends (the write ends go to siblings that stage a rank).
    """

    init_pid: int
    pidfd: int  # init's, opened by the stager before init could end: waits and signals use it
    port: int  # the run's MASTER_PORT, where the store process will listen
    status_r: int
    request_w: int
    hello_w: int
    go_r: int  # the go pipe's read end: a sibling's rank waits on it before its snippet
    ranks: list[RankPipes] = field(default_factory=list)

    def fds(self) -> list[int]:
        """Every descriptor, in the order `from_parts` reads them."""
        fds = [self.pidfd, self.status_r, self.request_w, self.hello_w, self.go_r]
        for pipes in self.ranks:
            for name in STREAMS:
                fds.extend(pipes.fds[name])
        return fds

    def header(self) -> dict[str, int]:
        """What travels beside the descriptors."""
        return {"init_pid": self.init_pid, "port": self.port, "ranks": len(self.ranks)}

    @classmethod
    def from_parts(cls, header: dict[str, Any], fds: list[int]) -> StagedCell:
        """Rebuild the cell from its header and the descriptors received with it."""
        pidfd, status_r, request_w, hello_w, go_r, *rest = fds
        ranks = []
        for rank in range(int(header["ranks"])):
            pairs = rest[rank * 2 * len(STREAMS) : (rank + 1) * 2 * len(STREAMS)]
            ranks.append(RankPipes(rank, {name: (pairs[2 * i], pairs[2 * i + 1])
                                          for i, name in enumerate(STREAMS)}))  # fmt: skip
        return cls(int(header["init_pid"]), pidfd, int(header["port"]), status_r, request_w,
                   hello_w, go_r, ranks)  # fmt: skip

    def close(self) -> None:
        """Close every descriptor (the stager's copies, once handed over)."""
        for fd in self.fds():
            os.close(fd)


def status_line(message: dict[str, Any]) -> bytes:
    """One line of init's status pipe: {"isolated"}, {"started"}, {"setup_error"}, a rank's end
    {"rank", "wait"}, a look's answer {"look"}, a time-out's CPU sample {"cpu", "sample_ms"}, or
    {"cleared"} (every rank ended, nothing else left in the run's pid namespace)."""
    return (json.dumps(message) + "\n").encode()


def budget_ranks(nproc: int, launcher: str) -> int:
    """Ranks to size a run's limits for: a python launch also holds its parent process."""
    return nproc + 1 if launcher == "python" else nproc


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd`."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]

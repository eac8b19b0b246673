"""A uid and gid of its own for every slot, so that no per-uid kernel count spans two runs.

The kernel keeps several counts per user, not per process tree: RLIMIT_NPROC (every thread of
the uid), inotify instances and watches, pipe buffer pages, POSIX message queues. With one
sandbox uid for every run, a run holding ~590 threads left a concurrent run unable to start a
thread, and one run's inotify instances made another's inotify_init fail. A slot runs one run at
a time, so a uid per slot makes each of those counts per run. A uid also walls off signals: a
process of one uid cannot signal another's (kill(2) checks the real/saved uid).

The uids come from a fixed range above every range a distribution or systemd hands out (users
end at 60000, systemd's dynamic users at 65519, nspawn's container ranges at 0x6FFFFFFF) and
below 2^31, since some tools read uids as signed. Several executors on one host (tests run a
few) draw from the same range: a slot claims a uid by holding an exclusive flock on that uid's
file in LOCK_DIR for as long as it lives, and the kernel drops the lock when the slot dies, so a
crashed executor never leaks a uid. Nothing outside a run ever owns a file as one of these uids:
a rank can write only its run's private /tmp and /dev/shm, fresh tmpfs mounts that vanish with
the run, so the next run of the slot (same uid) finds nothing of the last.
"""

from __future__ import annotations

import fcntl
import os

FIRST_UID = 0x7E000000  # 2113929216
UID_COUNT = 4096
LOCK_DIR = "/run/ranklab-uids"


class NoFreeIdentity(RuntimeError):
    """Every uid of the range is held by a live slot."""


def claim(lock_dir: str = LOCK_DIR, first: int = FIRST_UID, count: int = UID_COUNT) -> int:
    """Claim a free uid of the range for the calling process's lifetime; return it.

    The lock's descriptor is left open on purpose (close-on-exec, and every rank closes what it
    inherits): closing it would free the uid for another slot while this one still uses it.
    """
    os.makedirs(lock_dir, mode=0o700, exist_ok=True)
    for uid in range(first, first + count):
        fd = os.open(os.path.join(lock_dir, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uid
    raise NoFreeIdentity(f"all {count} sandbox uids from {first} are in use ({lock_dir})")


def store_uid(uid: int, count: int = UID_COUNT) -> int:
    """The uid of slot `uid`'s rendezvous store process: one of its own, just past the range
    (so no other slot's, held by the same lock), which no snippet ever runs as. The store starts
    while the next run is staged, before any request; as the ranks' uid it would be a process
    of theirs between runs, and one a rank could signal."""
    return uid + count


def in_range(uid: int, first: int = FIRST_UID, count: int = UID_COUNT) -> bool:
    """Whether uid is one of the per-slot sandbox uids."""
    return first <= uid < first + count

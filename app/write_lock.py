"""One writer at a time on an SQLite file: this process's threads, its event loop, other processes.

SQLite lets one transaction write at a time. Left to itself, a writer that finds the file locked
sleeps and retries in its busy handler: unfair (a newcomer may win over one that waited for
seconds), idle while the lock is free between two tries, and, after the busy timeout, an error
("database is locked"). Every writer of the app takes this lock instead, right before its
BEGIN IMMEDIATE, and lets it go when its transaction ends: a thread lock orders this process's
writers, an exclusive flock(2) on a file beside the database orders the processes (`ranklab
serve --workers 2`). Both wake the next waiter the moment the lock is free, so SQLite's busy
handler is not reached at all, except by a writer that does not take this lock (the sqlite3 shell).

It also makes commits durable when the app asks for synchronous=full (app.db): connections run
SQLite's NORMAL (no flush at commit) and the holder flushes the WAL itself, after each commit or
once for a group of commits (`group`), before their requests are answered.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_locks: dict[Path, WriteLock] = {}
_registry = threading.Lock()


class WriteLock:
    """The write lock of one SQLite file, shared by every engine of this process on that file."""

    def __init__(self, database: Path) -> None:
        self.path = database.with_name(database.name + ".write-lock")
        self._threads = threading.Lock()  # this process's writers, one at a time
        self._fd: int | None = None
        self._pid = 0  # the fd is this process's own: a forked child opens its own
        self._holder: int | None = None  # the thread (or event loop) holding it
        self.wal = database.with_name(database.name + "-wal")
        self._grouped = False  # commits wait for the end of the holder's group to be flushed
        self._unflushed = False

    @classmethod
    def of(cls, database: Path) -> WriteLock:
        """The lock of this database file (one per file and process)."""
        key = database.resolve()
        with _registry:
            found = _locks.get(key)
            if found is None:
                found = _locks[key] = cls(key)
            return found

    def _file(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            self._pid = os.getpid()
        return self._fd

    def held_here(self) -> bool:
        """Whether the calling thread holds the lock (an event loop holds it for its task)."""
        return self._holder == threading.get_ident()

    def acquire(self, timeout: float) -> bool:
        """Wait (at most `timeout` for this process's writers) and take the lock for the calling
        thread; False if this process's queue did not move in time. Blocks: never on a loop."""
        if not self._threads.acquire(timeout=timeout):
            return False
        self._take_file(blocking=True)
        return True

    def try_acquire(self) -> bool:
        """Take the lock for the calling thread if it is free now, without waiting."""
        if not self._threads.acquire(blocking=False):
            return False
        if not self._take_file(blocking=False):
            self._threads.release()
            return False
        return True

    def acquire_for(self, thread: int, timeout: float) -> bool:
        """Take the lock, waiting in this (worker) thread, on behalf of another `thread` (an event
        loop that must not block): that thread holds it afterwards."""
        if not self.acquire(timeout):
            return False
        self._holder = thread
        return True

    def _take_file(self, blocking: bool) -> bool:
        flags = fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB
        try:
            # Another process holds it for one short transaction at most: its own writers queue
            # behind its thread lock, not here.
            fcntl.flock(self._file(), flags)
        except BlockingIOError:
            return False
        except BaseException:
            self._threads.release()
            raise
        self._holder = threading.get_ident()
        return True

    def committed(self) -> None:
        """A writer committed (with SQLite's synchronous=NORMAL, which does not flush): flush
        the WAL now, or once when the holder's group of writes ends (a group commit)."""
        if self._grouped:
            self._unflushed = True
        else:
            self._flush()

    @contextmanager
    def group(self) -> Iterator[None]:
        """The holder's writes inside share one flush of the WAL, made before this ends: their
        requests, answered after it, are on disk as with synchronous=FULL, for one fsync."""
        self._grouped = True
        try:
            yield
        finally:
            self._grouped = False
            if self._unflushed:
                self._unflushed = False
                self._flush()

    def _flush(self) -> None:
        try:
            wal = os.open(self.wal, os.O_RDONLY)
        except FileNotFoundError:  # nothing written since the last connection closed
            return
        try:
            os.fsync(wal)  # the file's data, whichever descriptor wrote it
        finally:
            os.close(wal)

    def release(self) -> None:
        """Let the next writer (of any process) go."""
        self._holder = None
        fcntl.flock(self._file(), fcntl.LOCK_UN)
        self._threads.release()

"""Copy, while a rank is staged, the pages of its warm parent that a typical run writes.

A rank is a fork of a warm parent: every page it writes (a refcount, an allocator's free list, a
cache torch fills on first use) is first copied by a copy-on-write fault. A 2-rank DDP step took
about 2,300 of them per rank; perf put them at about a third of a rank's CPU, more than the
snippet's own Python, and on these 2-core virtual machines each one that lands while gloo's
threads run also flushes the other cores' TLBs. They all fall inside the run.

So each warm parent learns once, at its start, which of its pages a run writes: a throw-away fork
runs the warm-up snippet (a 1-rank DDP step, the same one that finds the modules to warm) and
reads its own /proc/self/pagemap before and after; the pages it shared with the parent before
and holds alone after are the ones it copied. A staged rank (forked before the request, waiting
for its order) then copies those pages itself with MADV_POPULATE_WRITE (Linux >= 5.14), off the
run's path: the same bytes at the same addresses, faulted in as a write would, nothing a snippet
can tell apart (a page it never writes is only a private copy the kernel charges to the run, as
a copy it wrote would be). An address no longer mapped in the rank (its parents' heaps moved on
since) is refused by the kernel with ENOMEM and skipped. Best effort: without pagemap or
MADV_POPULATE_WRITE, ranks fault as before.

The list holds page addresses only, learned from the warm-up snippet, never from a request: no
run's data reaches another through it.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import ctypes
import json
import os
import select
import sys
import threading
from collections.abc import Iterable
from typing import NoReturn

MADV_POPULATE_WRITE = 23
PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT = 1 << 63
EXCLUSIVE = 1 << 56  # "page exclusively mapped" (Linux >= 4.2): mapped by this process only
LEARN_TIMEOUT_S = 120.0

# A run of pages: (first address, length in bytes).
Span = tuple[int, int]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def learn(code: str, environment: dict[str, str]) -> tuple[Span, ...]:
    """The spans of this process's pages that running `code` writes, found in a throw-away fork
    (empty if it could not tell)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _learn_in_child(code, environment, write_end)
    os.close(write_end)
    payload = b""
    with os.fdopen(read_end, "rb") as source:
        if select.select([source], [], [], LEARN_TIMEOUT_S)[0]:
            payload = source.read()
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    try:
        return tuple((int(start), int(length)) for start, length in json.loads(payload))
    except (ValueError, TypeError):
        return ()


def populate(spans: Iterable[Span]) -> int:
    """Copy these pages into the caller now, as writes would; return the bytes done."""
    done = 0
    for start, length in spans:
        if _libc.madvise(start, length, MADV_POPULATE_WRITE) == 0:
            done += length
    return done


def _learn_in_child(code: str, environment: dict[str, str], write_end: int) -> NoReturn:
    spans: list[Span] = []
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        ranges = _private_writable_ranges()
        shared = [_pagemap(start, end) for start, end in ranges]
        os.environ.update(environment)
        with contextlib.suppress(BaseException):
            exec(compile(code, "warmup.py", "exec"), {"__name__": "__main__"})
        # A rank's own end, as rank.run_rank has it: the non-daemon threads, the exit functions.
        with contextlib.suppress(BaseException):
            threading._shutdown()  # type: ignore[attr-defined]
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        for (start, end), before in zip(ranges, shared, strict=True):
            after = _pagemap(start, end)
            first = -1
            for index in range(len(before) + 1):
                copied = (
                    index < len(before)
                    and index < len(after)
                    and before[index] & (PRESENT | EXCLUSIVE) == PRESENT
                    and after[index] & (PRESENT | EXCLUSIVE) == PRESENT | EXCLUSIVE
                )
                if copied and first < 0:
                    first = index
                elif not copied and first >= 0:
                    spans.append((start + first * PAGE, (index - first) * PAGE))
                    first = -1
    finally:
        with os.fdopen(write_end, "w") as out:
            json.dump(spans, out)
        sys.stdout.flush()
        os._exit(0)


def _private_writable_ranges() -> list[tuple[int, int]]:
    """The private, writable mappings (heap, anonymous, a library's data), never a stack."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            name = fields[5] if len(fields) > 5 else ""
            if fields[1][1] != "w" or fields[1][3] != "p" or name.startswith("[st"):
                continue
            start, end = (int(address, 16) for address in fields[0].split("-"))
            ranges.append((start, end))
    return ranges


def _pagemap(start: int, end: int) -> array.array[int]:
    entries = array.array("Q")
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        data = os.pread(pagemap.fileno(), (end - start) // PAGE * 8, start // PAGE * 8)
    entries.frombytes(data[: len(data) // 8 * 8])
    return entries

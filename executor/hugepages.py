"""Back a warm parent's heap with transparent huge pages, so that each fork of it costs less.

A warm parent holds ~220 MB of anonymous memory (torch's C++ registrations on the malloc heap,
Python's objects in mmap'd arenas), and every run forks it several times: the run's init, its
store process, each rank, and a sibling's staging child. fork() copies a page-table entry per
resident 4 KiB page of that memory (~55,000) and exit() tears them down again, which perf showed
as the largest single cost of plain 2-rank runs (copy_page_range and unmap_page_range: a quarter
of all CPU samples). Once the memory is collapsed into 2 MiB pages, fork copies one entry per
2 MiB instead, and a child that writes to one of them (a refcount) splits only that one.

Nothing a rank can see changes: the same bytes at the same addresses, the same limits (a split
page is charged as a copied one was). MADV_COLLAPSE (Linux >= 6.1) is synchronous and works
under THP's default `madvise` mode without marking the mappings, so memory the ranks allocate
later is not backed by huge pages. Best effort: where the kernel lacks it or THP is `never`, the
warm parent simply stays as it was.
"""

from __future__ import annotations

import ctypes
import os

MADV_COLLAPSE = 25
HUGE = 2 * 1024 * 1024

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def collapse_heap() -> int:
    """Collapse the caller's private anonymous memory into huge pages; return the MiB done."""
    if not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"):
        return 0
    done = 0
    for start, end in _anonymous_ranges():
        # Only whole, aligned 2 MiB ranges can be one huge page.
        first = (start + HUGE - 1) & ~(HUGE - 1)
        last = end & ~(HUGE - 1)
        if last - first >= HUGE and _libc.madvise(first, last - first, MADV_COLLAPSE) == 0:
            done += (last - first) // (1024 * 1024)
    return done


def _anonymous_ranges() -> list[tuple[int, int]]:
    """The private, writable, anonymous mappings (the malloc heap and unnamed ones); never a
    stack, a file's pages or a shared mapping."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            permissions = fields[1]
            name = fields[5] if len(fields) > 5 else ""
            if permissions[1] != "w" or permissions[3] != "p" or name not in ("", "[heap]"):
                continue
            start, end = (int(address, 16) for address in fields[0].split("-"))
            ranges.append((start, end))
    return ranges

"""attack: flush+reload on a file every run shares with the host: evict its pages from the page
cache (posix_fadvise POSIX_FADV_DONTNEED; madvise MADV_PAGEOUT and MADV_COLD on a mapping of
it), wait, then time a read of one byte: 250-500 us cold, 3 us cached, so the run learns
whether the host or another run read the file meanwhile (a probe on /usr/bin/cpack saw the
host's `head /usr/bin/cpack` to the moment). The run here evicts a /usr file this test
process has just read.
expect: status ok, every eviction call answers 0 (advice is a hint: the filter answers it
without running it), and the file's page is still cached afterwards, as this process (outside
the sandbox) sees with preadv2(RWF_NOWAIT), which fails with EAGAIN on a page not cached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run
from tests.support.page_cache import cached

pytestmark = pytest.mark.executor

# Files of /usr (a bind of the host's in the sandbox) that hardly anything else reads.
CANDIDATES = [Path("/usr/share/common-licenses/Artistic"), Path("/usr/share/common-licenses/BSD")]

EVICT = """
import ctypes, json, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
POSIX_FADV_DONTNEED, MADV_COLD, MADV_PAGEOUT = 4, 20, 21
answers = {}
fd = os.open(PATH, os.O_RDONLY)
with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as mapped:
    mapped[0]  # mapped, so that there is something to page out
    for name, advice in {"madvise_cold": MADV_COLD, "madvise_pageout": MADV_PAGEOUT}.items():
        try:
            answers[name] = mapped.madvise(advice)
        except OSError as error:
            answers[name] = error.strerror
# Last: nothing of this run reads the file after it (a read would cache the page again).
answers["fadvise_dontneed"] = os.posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
print(json.dumps(answers))
"""


def test_a_run_cannot_evict_a_shared_file_from_the_page_cache(sandboxed: Executor) -> None:
    path = next((found for found in CANDIDATES if found.is_file()), None)
    if path is None:
        pytest.skip("none of the /usr files this attack evicts is on this host")
    path.read_bytes()
    assert cached(path)
    result = run(sandboxed, f"PATH = {str(path)!r}\n" + EVICT, nproc=1)
    assert result.status is RunStatus.OK, result
    answers = json.loads(result.ranks[0].stdout)
    assert answers == {"fadvise_dontneed": None, "madvise_cold": None, "madvise_pageout": None}
    assert cached(path), "the run evicted a file it shares with the host"

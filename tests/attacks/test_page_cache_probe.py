"""Attack: learn what other runs do through the host's shared kernel state: which host files
sit in the page cache (preadv2 with RWF_NOWAIT reads only cached pages; cachestat counts them),
so which files another run has just read; and flush the host's whole filesystem (syncfs), its
disk queue shared with every run. Must get: status ok, preadv2 with RWF_NOWAIT refused with
EOPNOTSUPP (a plain preadv2 still reads), syncfs and cachestat refused with EPERM."""

from __future__ import annotations

import json
import platform

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = [
    pytest.mark.executor,
    pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 system call numbers"),
]

ATTACK = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(os.__file__, os.O_RDONLY)
seen = {"plain": os.preadv(fd, [bytearray(64)], 0, 0)}
try:
    seen["nowait"] = os.preadv(fd, [bytearray(64)], 0, os.RWF_NOWAIT)
except OSError as error:
    seen["nowait"] = -error.errno
for name, call in {"syncfs": lambda: libc.syncfs(fd),
                   "cachestat": lambda: libc.syscall(ctypes.c_long(451), fd, 0, 0, 0)}.items():
    ctypes.set_errno(0)
    answer = call()
    seen[name] = answer if answer >= 0 else -ctypes.get_errno()
print(json.dumps(seen))
"""


def test_page_cache_probes_and_host_flushes_are_refused(sandboxed: Executor) -> None:
    result = run(sandboxed, ATTACK, nproc=1)
    assert result.status == RunStatus.OK, result
    seen = json.loads(result.ranks[0].stdout)
    assert seen == {"plain": 64, "nowait": -95, "syncfs": -1, "cachestat": -1}, seen

"""attack: a rank reads a host path from its own memory. The warm parents were told where the
pool's sockets live (the zygote's socket, the siblings' sockets: a directory under the host's
temp dir), so the name of that directory sat in their heaps, and every rank forked from them
inherited it, readable through /proc/self/mem.
expect: ok, and nothing found: a run scans every readable region of its memory on each rank
(its first rank is the main zygote's, the others a sibling's) for the pool directory's name and
finds it nowhere; the warm parents reach their sockets through a directory descriptor they
inherit (/proc/self/fd/N/...), never by name."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from executor.contract import RunRequest, RunStatus
from executor.runner import Executor

pytestmark = pytest.mark.executor

# Each rank searches its memory for the pool directory's prefix and reports what follows it; its
# code spells the prefix in pieces, so what it finds is what its parents left, not its code.
SCAN = """
import json, os, re
pattern = re.compile(("ranklab" + "-executor-").encode() + rb"([A-Za-z0-9_]{1,16})")
found = set()
memory = os.open("/proc/self/mem", os.O_RDONLY)
with open("/proc/self/maps") as maps:
    regions = [line.split() for line in maps]
for fields in regions:
    path = fields[5] if len(fields) > 5 else ""
    if "r" not in fields[1] or path in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
        continue
    start, end = (int(part, 16) for part in fields[0].split("-"))
    while start < end:
        size = min(32 << 20, end - start)
        try:
            chunk = os.pread(memory, size + 64, start)
        except OSError:
            break
        found.update(match.group(1).decode() for match in pattern.finditer(chunk))
        start += size
print(json.dumps(sorted(found)))
"""


def test_no_rank_finds_the_pool_directory_in_its_memory(sandboxed: Executor) -> None:
    directory = os.path.basename(sandboxed.pool._directory)
    suffix = directory.removeprefix("ranklab-executor-")
    assert suffix != directory  # the scan looks for the name the pool really uses
    request = RunRequest(code=SCAN, nproc=2, timeout_s=60, use_cache=False)
    result = asyncio.run(asyncio.wait_for(sandboxed.run(request), 120))
    assert result.status is RunStatus.OK, result
    for rank in result.ranks:
        found = json.loads(rank.stdout)
        assert not [name for name in found if suffix.startswith(name) or name == suffix], (
            f"rank {rank.rank} read the pool directory's name ({directory}) in its memory"
        )

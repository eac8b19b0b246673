"""Staged ranks copy, while they wait for their order, the pages of their warm parent that a run
writes (executor/prefault.py): learned once in a throw-away fork, copied with
MADV_POPULATE_WRITE, the same bytes at the same addresses."""

from __future__ import annotations

import array
import ctypes
import json
import os
import sys

import pytest

from executor import prefault
from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

PAGE = os.sysconf("SC_PAGE_SIZE")
WRITER = """
import ctypes
for address in ADDRESSES:
    ctypes.c_char.from_address(address).value = b"w"
"""


def _exclusive(address: int) -> bool:
    """Whether this process alone maps the page at `address` (pagemap bit 56)."""
    entries = array.array("Q")
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        entries.frombytes(os.pread(pagemap.fileno(), 8, address // PAGE * 8))
    return bool(entries[0] & prefault.EXCLUSIVE)


def test_learn_finds_the_pages_a_snippet_writes_and_populate_copies_them_unchanged() -> None:
    # Pages this process holds before the fork: the snippet writes into two of them.
    buffer = ctypes.create_string_buffer(16 * PAGE)
    base = (ctypes.addressof(buffer) + PAGE - 1) // PAGE * PAGE
    written = [base + 2 * PAGE, base + 7 * PAGE]
    for index in range(10):
        buffer[base - ctypes.addressof(buffer) + index * PAGE] = b"p"
    code = WRITER.replace("ADDRESSES", repr(written))
    spans = prefault.learn(code, {})
    learned = {start + offset for start, length in spans for offset in range(0, length, PAGE)}
    assert set(written) <= learned, (written, spans[:10])
    untouched = base + 4 * PAGE
    assert untouched not in learned
    # In a fork, populating copies those pages (now this process's alone), bytes unchanged.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            before = [_exclusive(address) for address in written]
            done = prefault.populate(spans)
            after = [_exclusive(address) for address in written]
            same = ctypes.string_at(base, 10 * PAGE) == b"".join(
                (b"p" + b"\0" * (PAGE - 1)) for _ in range(10)
            )
            os.write(write_end, json.dumps([before, after, done, same]).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as source:
        before, after, done, same = json.loads(source.read())
    os.waitpid(pid, 0)
    assert before == [False, False] and after == [True, True], (before, after)
    assert done >= 2 * PAGE
    assert same


def test_populate_skips_what_is_no_longer_mapped() -> None:
    # An address its parents' heaps gave back since: the kernel refuses it (ENOMEM); no fault.
    unmapped = (1 << 46) // PAGE * PAGE
    assert prefault.populate([(unmapped, PAGE)]) == 0


@pytest.mark.executor
def test_runs_from_prefaulted_ranks_print_what_they_did_before(executor: Executor) -> None:
    """The warm parents learned their pages (the zygote says how many MB), and runs whose ranks
    copied them behave as before: the copies are the parent's bytes."""
    if sys.platform != "linux":
        pytest.skip("Linux only")
    code = (
        "import torch, torch.distributed as dist, torch.nn as nn\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "dist.init_process_group('gloo')\n"
        "torch.manual_seed(0)\n"
        "model = DDP(nn.Linear(4, 2))\n"
        "loss = model(torch.ones(3, 4) * (dist.get_rank() + 1)).sum()\n"
        "loss.backward()\n"
        "grads = [round(p.grad.sum().item(), 4) for p in model.parameters()]\n"
        "print(round(loss.item(), 4), grads)\n"
        "dist.destroy_process_group()\n"
    )
    first = run(executor, code, nproc=2, timeout_s=30)
    second = run(executor, code, nproc=2, timeout_s=30)
    assert first.status is RunStatus.OK and second.status is RunStatus.OK, (first, second)
    assert [r.stdout for r in first.ranks] == [r.stdout for r in second.ranks]
    assert executor.info.get("hot_pages_mb", 0) >= 1, executor.info

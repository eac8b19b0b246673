"""Staged ranks copy, while they wait for their order, the pages of their warm parent that a run
writes (executor/prefault.py): learned once in a throw-away fork, copied with
MADV_POPULATE_WRITE, the same bytes at the same addresses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from executor import prefault
from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

PAGE = os.sysconf("SC_PAGE_SIZE")
CHECK = """
import array, ctypes, json, os, sys
from executor import prefault
PAGE = os.sysconf("SC_PAGE_SIZE")

def exclusive(address):
    entries = array.array("Q")
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        entries.frombytes(os.pread(pagemap.fileno(), 8, address // PAGE * 8))
    return bool(entries[0] & prefault.EXCLUSIVE)

# Pages this process holds before the fork: the snippet writes into two of them.
buffer = ctypes.create_string_buffer(16 * PAGE)
base = (ctypes.addressof(buffer) + PAGE - 1) // PAGE * PAGE
written = [base + 2 * PAGE, base + 7 * PAGE]
for index in range(10):
    ctypes.memset(base + index * PAGE, ord("p"), 1)
code = "import ctypes\\nfor a in %r:\\n    ctypes.memset(a, ord('w'), 1)\\n" % (written,)
spans = prefault.learn(code, {})
learned = {start + offset for start, length in spans for offset in range(0, length, PAGE)}
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    before = [exclusive(address) for address in written]
    done = prefault.populate(spans)
    after = [exclusive(address) for address in written]
    same = all(ctypes.string_at(base + i * PAGE, 1) == b"p" for i in range(10))
    os.write(write_end, json.dumps([before, after, done, same]).encode())
    os._exit(0)
os.close(write_end)
before, after, done, same = json.loads(os.read(read_end, 65536))
os.waitpid(pid, 0)
print(json.dumps({"written_learned": all(a in learned for a in written),
                  "untouched_learned": base + 4 * PAGE in learned,
                  "before": before, "after": after, "done": done, "same": same}))
"""


def test_learn_finds_the_pages_a_snippet_writes_and_populate_copies_them_unchanged() -> None:
    # In a process of its own: the learning fork runs the exit functions, as a rank's end does,
    # and this test process's own (a shared PostgreSQL server's stop) must not run in a fork.
    done = subprocess.run(
        [sys.executable, "-c", CHECK],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(prefault.__file__).resolve().parent.parent)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["written_learned"] and not seen["untouched_learned"], seen
    # In a fork, populating copies those pages (now that process's alone), bytes unchanged.
    assert seen["before"] == [False, False] and seen["after"] == [True, True], seen
    assert seen["done"] >= 2 * PAGE and seen["same"], seen


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

"""attack: one run takes every inotify instance its uid may hold (fs.inotify.max_user_instances,
a per-uid count) and keeps them while another run starts. With one sandbox uid for every run,
the other run's inotify_init failed (EMFILE): file watching, as a data loader or a tool uses it,
broke in a run that did nothing wrong. Each slot then got a uid of its own, and this test
expected the run beside the hoard to have inotify working.
expect (since inotify is refused in the sandbox, see test_inotify_watch.py): the hoarding run
can take no instance (ENOSYS at the first) and ends timeout, holding its slot; the run beside it
ends ok and gets the same answer it gets alone (ENOSYS, what a kernel without inotify gives, so
a watcher polls), never EMFILE."""

from __future__ import annotations

import asyncio

import pytest

from executor.contract import RunRequest, RunStatus
from executor.runner import Executor
from tests.attacks.beside import beside

pytestmark = pytest.mark.executor

INIT = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def inotify_init():
    fd = libc.inotify_init1(0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return fd
"""
HOARD = (
    INIT
    + """
import time
held = []
try:
    while True:
        held.append(inotify_init())
except OSError as error:
    print("holding", len(held), "instances:", error, flush=True)
time.sleep(60)
"""
)
VICTIM = (
    INIT
    + """
try:
    os.close(inotify_init())
    print("inotify works")
except OSError as error:
    print("inotify:", error)
"""
)


def test_a_run_holding_every_inotify_instance_does_not_break_another(sandboxed: Executor) -> None:
    hoard = RunRequest(code=HOARD, nproc=1, timeout_s=8, use_cache=False)
    victim = RunRequest(code=VICTIM, nproc=1, timeout_s=8, use_cache=False)
    alone = asyncio.run(sandboxed.run(victim))
    hoard_result, victim_result = beside(sandboxed, hoard, "holding", victim)
    assert hoard_result.status is RunStatus.TIMEOUT, hoard_result
    assert hoard_result.ranks[0].stdout.startswith(
        "holding 0 instances: [Errno 38] Function not implemented"
    ), hoard_result
    assert alone.status is RunStatus.OK and victim_result.status is RunStatus.OK, victim_result
    assert victim_result.ranks[0].stdout == alone.ranks[0].stdout, (alone, victim_result)
    assert victim_result.ranks[0].stdout == "inotify: [Errno 38] Function not implemented\n"

"""attack: one run takes every inotify instance its uid may hold (fs.inotify.max_user_instances,
a per-uid count) and keeps them while another run starts. With one sandbox uid for every run,
the other run's inotify_init failed (EMFILE): file watching, as a data loader or a tool uses it,
broke in a run that did nothing wrong.
expect: the hoarding run ends timeout; the run beside it ends ok, its inotify_init working.
Each slot runs as a uid of its own."""

from __future__ import annotations

from pathlib import Path

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
VICTIM = INIT + "os.close(inotify_init())\nprint('inotify works')\n"


def test_a_run_holding_every_inotify_instance_does_not_break_another(sandboxed: Executor) -> None:
    hoard = RunRequest(code=HOARD, nproc=1, timeout_s=8, use_cache=False)
    victim = RunRequest(code=VICTIM, nproc=1, timeout_s=8, use_cache=False)
    hoard_result, victim_result = beside(sandboxed, hoard, "holding", victim)
    # Every instance the uid may hold: the quota, not the rank's open-file limit, stopped it.
    quota = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    assert hoard_result.ranks[0].stdout.startswith(f"holding {quota} instances"), hoard_result
    assert hoard_result.status is RunStatus.TIMEOUT, hoard_result
    assert victim_result.status is RunStatus.OK, victim_result
    assert victim_result.ranks[0].stdout == "inotify works\n"

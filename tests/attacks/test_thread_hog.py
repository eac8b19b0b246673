"""attack: one run holds as many threads as its pids cgroup allows (~590 for a `launch: python`
run sized for 8 ranks) while another run starts. RLIMIT_NPROC counts every thread of a uid on
the host: with one sandbox uid for every run, the hog's threads used up the other run's
allowance (4 x its pids), and that run could start neither a thread nor gloo's.
expect: the hog ends timeout (holding its threads until its deadline); the run beside it ends
ok, its thread started and its all_reduce done. Each slot runs as a uid of its own."""

from __future__ import annotations

import pytest

from executor.contract import RunRequest, RunStatus
from executor.runner import Executor
from tests.attacks.beside import beside

pytestmark = pytest.mark.executor

HOG = """
import threading, time
threading.stack_size(256 * 1024)
hold = threading.Event()
count = 0
try:
    while True:
        threading.Thread(target=hold.wait, daemon=True).start()
        count += 1
except RuntimeError:
    pass
print("holding", count, "threads", flush=True)
time.sleep(60)
"""
VICTIM = """
import threading, torch, torch.distributed as dist
worker = threading.Thread(target=print, args=("thread started",))
worker.start()
worker.join()
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print(t.item())
"""


def test_a_run_holding_every_thread_it_may_does_not_starve_another(sandboxed: Executor) -> None:
    hog = RunRequest(code=HOG, nproc=8, launcher="python", timeout_s=10, use_cache=False)
    victim = RunRequest(code=VICTIM, nproc=2, timeout_s=8, use_cache=False)
    hog_result, victim_result = beside(sandboxed, hog, "holding", victim)
    held = int(hog_result.ranks[0].stdout.split()[1])
    assert held > 4 * (16 + 2 * 64), hog_result  # past the victim's old per-uid allowance
    assert hog_result.status is RunStatus.TIMEOUT, hog_result
    assert victim_result.status is RunStatus.OK, victim_result
    assert [rank.stdout for rank in victim_result.ranks] == ["thread started\n2.0\n"] * 2

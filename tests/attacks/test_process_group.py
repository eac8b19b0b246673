"""attack: one run signals its whole process group (kill(0, SIGKILL) or SIGSTOP) while another
run is in the middle of an all_reduce on the same executor. A pid namespace does not bound a
process-group signal: when every run's ranks sat in the warm parent's group, this killed (or
froze) the other run's ranks and its rendezvous store.
expect: the attacking run ends killed / timeout; the other run ends ok, every rank printing its
sum. Each run has a session and process group of its own (and its slot's own uid)."""

from __future__ import annotations

import signal

import pytest

from executor.contract import RankStatus, RunRequest, RunStatus
from executor.runner import Executor
from tests.attacks.beside import beside

pytestmark = pytest.mark.executor

# The rendezvous store (hosted by the run's init, as torchrun's agent hosts it) must survive too.
# Three ranks on an executor with two siblings: one rank is always forked by the run's own init
# (the others by siblings), so each run has ranks in the group the attack signals.
VICTIM = """
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
print("rendezvous done", flush=True)
time.sleep(3)
t = torch.ones(1)
dist.all_reduce(t, group=dist.new_group())  # a new group meets through the rendezvous store
print(t.item())
"""
ATTACK = "import os, signal\nos.kill(0, signal.%s)\nprint('still here')\n"


@pytest.mark.parametrize(
    ("signal_name", "attacker_status"),
    [("SIGKILL", RunStatus.ERROR), ("SIGSTOP", RunStatus.TIMEOUT)],
)
def test_signalling_its_own_process_group_reaches_no_other_run(
    sandboxed: Executor, signal_name: str, attacker_status: RunStatus
) -> None:
    victim = RunRequest(code=VICTIM, nproc=3, timeout_s=20, use_cache=False)
    attack = RunRequest(code=ATTACK % signal_name, nproc=3, timeout_s=3, use_cache=False)
    victim_result, attack_result = beside(sandboxed, victim, "rendezvous done", attack)
    assert attack_result.status is attacker_status, attack_result
    signalled = [rank for rank in attack_result.ranks if "still here" not in rank.stdout]
    assert signalled, attack_result  # the attack really signalled its own ranks
    if signal_name == "SIGKILL":
        assert any(rank.exit_code == -signal.SIGKILL for rank in signalled)
    assert victim_result.status is RunStatus.OK, victim_result
    assert [rank.stdout for rank in victim_result.ranks] == ["rendezvous done\n3.0\n"] * 3
    assert all(rank.status is RankStatus.OK for rank in victim_result.ranks)

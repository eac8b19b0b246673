"""A deadlock proven from its ranks' stacks in the run itself, without the long re-run.

Real executor, real gloo ranks. Every rank blocked in a collective with no CPU progress is a
hang; ranks that spend the limit inside collectives while still working are slow, not stuck,
and keep the re-run at a much longer limit that shows them finishing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.challenges import loader
from app.executor_client import HttpExecutorClient
from app.verification import command, evidence, proofs, service
from app.verification.rules import ItemReport, Verdict

pytestmark = pytest.mark.executor

SET = """\
id: hang-proofs
title: Hang proofs
topic: Verification
own_topic: true
description: A deadlock and a slow loop of collectives, both claimed to hang.
badge: {name: Stuck}
items:
  - id: ITEM
    kind: predict_output
    category: Predict Output
    difficulty: advanced
    title: Does it hang?
    prompt: What happens?
    explanation: See the ranks.
    code: |
CODE
    launch: {nproc: 2, backend: gloo, timeout_s: LIMIT}
    options:
      - id: A
        text: It hangs.
        outcome: {hangs: true}
      - id: B
        text: Both print done.
        outcome: {ranks: {all: {stdout: "done\\n"}}}
    answer: A
"""

DEADLOCK = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))
else:
    dist.barrier()
print("done")
"""

# Rank 0 has one more batch; its second forward waits for a collective rank 1 never joins
# (rank 1 waits in the barrier): join's barrier-after-uneven item with one shared batch.
DDP_FORWARD_DEADLOCK = """\
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
model = DDP(nn.Linear(2, 1))
for step in range(2 if dist.get_rank() == 0 else 1):
    model(torch.ones(4, 2)).sum().backward()
dist.barrier()
print("done")
"""

# Both ranks spend the limit inside all_reduce, working: about 6 s of collectives, then done.
BUSY_COLLECTIVES = """\
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
end = time.time() + 6
going = torch.ones(1)
while going.item():
    going.fill_(float(time.time() < end))
    dist.all_reduce(going, op=dist.ReduceOp.MIN)
print("done")
"""


def write_set(folder: Path, item_id: str, code: str, limit_s: float = 2) -> None:
    indented = "\n".join("      " + line for line in code.splitlines())
    text = SET.replace("ITEM", item_id).replace("CODE", indented).replace("LIMIT", str(limit_s))
    (folder / "set.yaml").write_text(text)


def verify(
    executor_url: str, folder: Path, item_id: str, code: str, limit_s: float = 2
) -> ItemReport:
    write_set(folder, item_id, code, limit_s)
    report = loader.load_path(folder)
    assert report.ok, report.errors
    (loaded,) = report.sets
    (item,) = loaded.challenge_set.items
    client = HttpExecutorClient(executor_url)
    return service.verify_item(client, loaded, item, 3, cuda_devices=0)


def test_a_deadlock_is_proven_from_its_stacks_without_the_long_rerun(executor_url, tmp_path):
    # A limit well past the second or two the executor takes to prove the deadlock.
    report = verify(executor_url, tmp_path, "deadlock", DEADLOCK, limit_s=8)
    assert report.verdict is Verdict.PASS, report.problems
    # The three perturbed runs and no re-run at a longer limit: the first waits out its limit
    # (what the ranks do within it is seen), the executor ends the other two once it proved
    # every rank stuck (executor/hangstop.py).
    assert [o.long_limit for o in report.observations] == [False, False, False]
    assert [o.result.stopped_when_stuck for o in report.observations] == [False, True, True]
    (proof,) = [note for note in report.notes if note.startswith("hang proven")]
    assert "rank 0: line 4, `dist.all_reduce`; rank 1: line 6, `dist.barrier`" in proof


def test_a_rank_idle_in_a_ddp_forward_is_proven_stuck_without_the_long_rerun(
    executor_url, tmp_path
):
    report = verify(executor_url, tmp_path, "ddp-forward", DDP_FORWARD_DEADLOCK, limit_s=4)
    assert report.verdict is Verdict.PASS, report.problems
    assert [o.long_limit for o in report.observations] == [False, False, False]
    (proof,) = [note for note in report.notes if note.startswith("hang proven")]
    assert "rank 0: line 6, `distributed.forward`; rank 1: line 7, `dist.barrier`" in proof


def test_ranks_working_inside_collectives_are_not_proven_stuck(executor_url, tmp_path):
    report = verify(executor_url, tmp_path, "busy", BUSY_COLLECTIVES)
    assert report.observations[0].result.status.value == "timeout"
    assert any(o.long_limit for o in report.observations)  # the re-run tells slow from stuck
    assert report.verdict is Verdict.FAIL
    assert any("a slow rank, not a hang" in problem for problem in report.problems)
    assert not any(note.startswith("hang proven") for note in report.notes)


def test_verify_keeps_the_proven_hangs_observed_time_out_in_the_proofs_file(executor_url, tmp_path):
    """Run it serves this record instead of re-running the hang (app.runs.recorded)."""
    write_set(tmp_path, "deadlock", DEADLOCK)
    proofs_file = tmp_path / proofs.FILE_NAME
    status = command.verify(tmp_path, executor_url=executor_url, proofs_path=proofs_file)
    assert status == 0
    (loaded,) = loader.load_path(tmp_path).sets
    (item,) = loaded.challenge_set.items
    proof = proofs.load(proofs_file)[proofs.item_key("hang-proofs", "deadlock")]
    assert proof.verdict == "pass" and proof.hash == evidence.item_hash(loaded, item)
    assert proof.observed is not None
    assert proof.observed["status"] == "timeout" and proof.observed["observed_at"]
    assert {rank["status"] for rank in proof.observed["ranks"]} == {"timeout"}

"""Verify's early stop is sound: a claim that the run hangs is proven in seconds when every
rank is stuck, and still fails when the ranks would in fact raise or finish before the limit.

Real executor, real gloo ranks, three perturbed runs per item as `ranklab verify` makes them.
Only a key that says the run hangs lets the executor stop a run early, so each case keys the
claim under test and offers the opposite as the distractor: one verify judges a wrong claim
and a right one. Where the ranks would raise or finish, the key "it hangs" must be shown false
and the distractor "it ends" true (it "also matches"); had the executor stopped a run that was
not stuck, the run would have shown a hang and the item would pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.challenges import loader
from app.executor_client import HttpExecutorClient
from app.verification import service
from app.verification.rules import ItemReport, Verdict
from executor.contract import RunStatus

pytestmark = pytest.mark.executor

HANGS = {"hangs": True}
ENDS = {"hangs": False}
LIMIT_S = 8  # well past the second or two a proof of a hang takes, and every case's own end


def verify(
    executor_url: str, folder: Path, code: str, key: dict[str, Any], wrong: dict[str, Any],
    nproc: int = 2, limit_s: float = LIMIT_S,
) -> ItemReport:  # fmt: skip
    """Verify a one-item set whose key (A) is `key` and whose distractor (B) is `wrong`."""
    item = {
        "id": "case",
        "kind": "predict_output",
        "category": "Predict Output",
        "difficulty": "advanced",
        "title": "Does it hang?",
        "prompt": "What happens?",
        "explanation": "See the ranks.",
        "code": code,
        "launch": {"nproc": nproc, "backend": "gloo", "timeout_s": limit_s},
        "options": [
            {"id": "A", "text": "This.", "outcome": key},
            {"id": "B", "text": "That.", "outcome": wrong},
        ],
        "answer": "A",
    }
    document = {
        "id": "hang-stops",
        "title": "Hang stops",
        "topic": "Verification",
        "own_topic": True,
        "description": "Runs that hang, and runs that only look stuck for a while.",
        "badge": {"name": "Stuck"},
        "items": [item],
    }
    (folder / "set.yaml").write_text(json.dumps(document))  # JSON is YAML
    report = loader.load_path(folder)
    assert report.ok, report.errors
    (loaded,) = report.sets
    (loaded_item,) = loaded.challenge_set.items
    client = HttpExecutorClient(executor_url)
    return service.verify_item(client, loaded, loaded_item, 3, cuda_devices=0)


def none_stopped(report: ItemReport) -> bool:
    return not any(o.result.stopped_when_stuck for o in report.observations)


def assert_hang_claim_refuted(report: ItemReport) -> None:
    """The key (it hangs) fails on a run that ended, the distractor (it ends) held throughout,
    and no run was stopped early."""
    assert report.verdict is Verdict.FAIL
    assert any("expected a hang, but the run ended" in p for p in report.problems), report.problems
    assert any(p.startswith("distractor B also matches") for p in report.problems), report.problems
    assert len(report.observations) == 3 and none_stopped(report)


# Ranks that wait in a collective of a group whose timeout (4 s) is shorter than the limit:
# they raise at that timeout. The executor cannot see a timeout set inside a blocked rank, so
# a snippet that sets one is never stopped early (executor/hangstop.py, `refusal`).
GROUP_TIMEOUTS = {
    "init_process_group(timeout=...)": """\
from datetime import timedelta
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=timedelta(seconds=4))
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))
else:
    dist.barrier()
""",
    "new_group(timeout=...)": """\
from datetime import timedelta
import torch, torch.distributed as dist
dist.init_process_group("gloo")
pair = dist.new_group([0, 1], timeout=timedelta(seconds=4))
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1), group=pair)
else:
    dist.barrier(group=pair)
""",
    "monitored_barrier(timeout=...)": """\
from datetime import timedelta
import torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.monitored_barrier(timeout=timedelta(seconds=4))
else:
    dist.barrier()
""",
}


@pytest.mark.parametrize("code", GROUP_TIMEOUTS.values(), ids=GROUP_TIMEOUTS.keys())
def test_ranks_that_raise_at_their_groups_timeout_do_not_hang(executor_url, tmp_path, code):
    report = verify(executor_url, tmp_path, code, key=HANGS, wrong=ENDS)
    assert_hang_claim_refuted(report)
    assert all(o.result.status is RunStatus.ERROR for o in report.observations)


# One rank is not in a collective at all but asleep, computing, or waiting on a timer thread,
# while its peer waits for it: not a hang yet.
NOT_YET = {
    "asleep": """\
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 1:
    time.sleep(3)
dist.all_reduce(torch.ones(1))
print("done")
""",
    "computing": """\
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 1:
    end = time.time() + 3
    while time.time() < end:
        pass
dist.all_reduce(torch.ones(1))
print("done")
""",
    # Both main threads block in a collective; a thread of rank 1's ends it 3 s later.
    "a timer thread": """\
import os, threading, torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 1:
    threading.Timer(3, lambda: (print("done", flush=True), os._exit(0))).start()
    dist.barrier()
else:
    dist.all_reduce(torch.ones(1))
""",
}


@pytest.mark.parametrize("code", NOT_YET.values(), ids=NOT_YET.keys())
def test_a_rank_asleep_or_working_while_its_peer_waits_is_not_a_hang(executor_url, tmp_path, code):
    ends = {"hangs": False, "ranks": {"1": {"stdout": "done\n"}}}
    report = verify(executor_url, tmp_path, code, key=HANGS, wrong=ends)
    assert_hang_claim_refuted(report)


def test_a_rank_that_exits_while_its_peer_waits_makes_the_peer_raise(executor_url, tmp_path):
    code = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))  # rank 1 has gone: gloo says "Connection closed by peer"
"""
    ends = {"hangs": False, "ranks": {"0": {"status": "raises"}, "1": {"status": "returns"}}}
    report = verify(executor_url, tmp_path, code, key=HANGS, wrong=ends)
    assert_hang_claim_refuted(report)


def test_ranks_left_waiting_on_each_other_after_a_peer_exits_do_hang(executor_url, tmp_path):
    # Rank 2 leaves after creating the pair's group; ranks 0 and 1 then wait in different
    # collectives of that group, which rank 2's going does not touch: a hang, proven early.
    code = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
pair = dist.new_group([0, 1])
rank = dist.get_rank()
if rank == 0:
    dist.all_reduce(torch.ones(1), group=pair)
elif rank == 1:
    dist.barrier(group=pair)
print(f"rank {rank} leaves", flush=True)
"""
    key = {"hangs": True, "ranks": {"0": {"status": "hangs"}, "2": {"stdout": "rank 2 leaves\n"}}}
    wrong = {"ranks": {"0": {"stdout": "rank 0 leaves\n"}}}
    report = verify(executor_url, tmp_path, code, key=key, wrong=wrong, nproc=3)
    assert report.verdict is Verdict.PASS, report.problems
    assert len(report.observations) == 3
    stopped = [o.result.stopped_when_stuck for o in report.observations]
    assert stopped == [False, True, True]  # the first run waits out its limit
    (proof,) = [note for note in report.notes if note.startswith("hang proven")]
    assert "rank 0: line 6, `dist.all_reduce`; rank 1: line 8, `dist.barrier`" in proof
    assert "before their limit" in proof


def test_a_hang_the_executor_does_not_watch_waits_out_its_limit(executor_url, tmp_path):
    # A real deadlock, but the snippet sets a group timeout (5 minutes, past any limit): the
    # executor does not look, the run takes its limit, and the stacks at the limit prove it.
    code = """\
from datetime import timedelta
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=timedelta(minutes=5))
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))
else:
    dist.barrier()
"""
    report = verify(executor_url, tmp_path, code, key=HANGS, wrong=ENDS, limit_s=3)
    assert report.verdict is Verdict.PASS, report.problems
    assert len(report.observations) == 1 and none_stopped(report)
    assert any("never stops early a snippet that says 'timedelta'" in n for n in report.notes)


# Waits that end by themselves in ways no reading of the code can rule out. The first run of a
# hang claim waits out its limit, so it sees the ranks raise or finish and the claim fails,
# whatever the executor makes of the later runs.
SELF_ENDING = {
    # A group timeout of 4 s passed by position, built without writing `timedelta`.
    "a positional group timeout": """\
import datetime, torch, torch.distributed as dist
four = datetime.datetime(2000, 1, 1, 0, 0, 4) - datetime.datetime(2000, 1, 1)
dist.init_process_group("gloo", None, four)
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))
else:
    dist.barrier()
""",
    # Rank 1 sleeps in C inside the collective, unpickling what rank 0 broadcast.
    "a sleep inside a collective": """\
import time, torch.distributed as dist


class Nap:
    def __reduce__(self):
        return (time.sleep, (4,))


dist.init_process_group("gloo")
objects = [Nap() if dist.get_rank() == 0 else None]
dist.broadcast_object_list(objects, src=0)
dist.barrier()
print("done")
""",
}


@pytest.mark.parametrize("code", SELF_ENDING.values(), ids=SELF_ENDING.keys())
def test_a_wait_that_ends_by_itself_is_not_proven_a_hang(executor_url, tmp_path, code):
    report = verify(executor_url, tmp_path, code, key=HANGS, wrong=ENDS)
    assert report.verdict is Verdict.FAIL
    assert any("expected a hang, but the run ended" in p for p in report.problems), report.problems
    first = report.observations[0].result
    assert first.status is not RunStatus.TIMEOUT and not first.stopped_when_stuck

"""What a learner reads for a rank stopped because a peer failed, from a real run (real gloo
ranks through the session's executor, as torchrun runs them): "stopped after rank 1 failed"."""

from __future__ import annotations

import pytest

from app.labs import status_words
from executor.contract import RankStatus, RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor

# Rank 1 raises once rank 0 has nothing more to do with it (the send it waits for is rank 0's
# last call with rank 1); rank 0 then waits in an all_reduce of its pair with rank 2, which never
# comes (it sleeps), so rank 0 cannot see rank 1's connection close: only the stop that follows
# a failed peer ends it, as torchrun's does. (Without the send, rank 0 was sometimes still
# finishing new_group with rank 1 and raised "Connection closed by peer" itself.)
PEER_FAILS = """\
import time
import torch, torch.distributed as dist

dist.init_process_group("gloo")
pair = dist.new_group([0, 2])
rank = dist.get_rank()
if rank == 1:
    dist.recv(torch.zeros(1), src=0)
    raise RuntimeError("rank 1 gave up")
if rank == 2:
    time.sleep(60)
dist.send(torch.ones(1), dst=1)
dist.all_reduce(torch.ones(1), group=pair)
"""


def test_a_rank_stopped_because_a_peer_failed_says_so(executor: Executor) -> None:
    result = run(executor, PEER_FAILS, nproc=3, timeout_s=20)
    assert result.status is RunStatus.ERROR, result  # not the 20 s time limit
    waiting, failed, sleeping = result.ranks
    assert failed.status is RankStatus.ERROR and failed.exception is not None
    assert waiting.status is RankStatus.KILLED and sleeping.status is RankStatus.KILLED
    said = status_words.ranks_said(result.model_dump(mode="json"))
    assert said[0] == "stopped after rank 1 failed"
    assert said[2] == "stopped after rank 1 failed"
    assert said[1] == "error"

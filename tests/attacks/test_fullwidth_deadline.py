"""attack: a deadlocked snippet gives its process group a short timeout spelled in fullwidth
letters (`ｔｉｍｅｏｕｔ=datetime.ｔｉｍｅｄｅｌｔａ(seconds=3)`), then asks verify's early stop
(stop_when_stuck). Python reads names in their NFKC form, so the keyword is `timeout=`, but the
early stop's word filter compared the text as written, found no word, proved the ranks stuck and
stopped the run as a time-out after about 1.5 s, while the run would have ended by itself, in an
error, at the group's timeout: verify would have kept a hang that never happens.
expect: the executor declines to look; the run ends error at the group's timeout (3 s), well
within its limit, never stopped_when_stuck."""

from __future__ import annotations

import pytest

from executor.runner import Executor
from tests.attacks.test_hidden_deadline import ends_at_its_own_deadline

pytestmark = pytest.mark.executor

ATTACK = """
import datetime, torch, torch.distributed as dist
dist.init_process_group("gloo", ｔｉｍｅｏｕｔ=datetime.ｔｉｍｅｄｅｌｔａ(seconds=3))
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))
else:
    dist.barrier()
"""


def test_a_deadline_spelled_in_fullwidth_letters_is_never_stopped_as_a_hang(
    sandboxed: Executor,
) -> None:
    ends_at_its_own_deadline(sandboxed, ATTACK)

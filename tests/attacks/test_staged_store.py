"""Attack: look for other rendezvous stores from inside a run. Each slot's next run is staged
with its store already listening (store.py), so a run might hope to reach that store (and write
keys the next learner's ranks would read) or find one where `python snippet.py` has none. Must
get: status ok; a torchrun launch sees exactly one listener, its own store on MASTER_PORT; a
python launch sees none (its staged store was ended before the snippet ran)."""

from __future__ import annotations

import json

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor

ATTACK = """
import json, os
listening = []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "0A":  # TCP_LISTEN
            listening.append(int(local.rsplit(":", 1)[1], 16))
print(json.dumps({"listening": sorted(listening), "master_port": os.environ.get("MASTER_PORT")}))
"""


def test_a_run_sees_only_its_own_store_listening(sandboxed: Executor) -> None:
    for _ in range(2):  # the second run is the one staged while the first ran
        result = run(sandboxed, ATTACK, nproc=2)
        assert result.status == RunStatus.OK, result
        for rank in result.ranks:
            seen = json.loads(rank.stdout)
            assert seen["listening"] == [int(seen["master_port"])], seen


def test_a_python_launch_finds_no_store_listening(sandboxed: Executor) -> None:
    result = run(sandboxed, ATTACK, nproc=1, launcher="python")
    assert result.status == RunStatus.OK, result
    assert json.loads(result.ranks[0].stdout) == {"listening": [], "master_port": None}

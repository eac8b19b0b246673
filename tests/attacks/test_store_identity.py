"""Attack: reach the run's rendezvous store process from a rank. It starts while the next run is
staged, before any request (store.py), so it must be nobody a rank can touch: not root, not the
ranks' own uid (a rank could signal it, and it would be a process of theirs between runs), and
confined as the ranks are on every thread, its server thread included. Must get: status ok; the
store's every thread runs as a uid of its own (identities.store_uid of the ranks' uid), with
no_new_privs and the seccomp allow-list; a rank's SIGKILL to it is refused (EPERM)."""

from __future__ import annotations

import json

import pytest

from executor import identities
from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor

ATTACK = """
import json, os, signal, torch.distributed as dist
dist.init_process_group("gloo")
me = os.getpid()
threads = []
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            fields = dict(line.split(":", 1) for line in
                          open(f"/proc/{pid}/task/{tid}/status").read().splitlines() if ":" in line)
            threads.append({"pid": int(pid), "name": fields["Name"].strip(),
                            "uid": int(fields["Uid"].split()[0]),
                            "seccomp": int(fields["Seccomp"]),
                            "nnp": int(fields["NoNewPrivs"])})
    except OSError:
        pass
store = sorted({t["pid"] for t in threads if t["name"] == "pt_tcpstore_uv"})
try:
    os.kill(store[0], signal.SIGKILL)
    kill = "sent"
except OSError as error:
    kill = error.errno
dist.barrier()
dist.destroy_process_group()
print(json.dumps({"uid": os.getuid(), "store": store, "kill": kill,
                  "store_threads": [t for t in threads if t["pid"] in store]}))
"""


def test_the_store_is_confined_as_a_uid_no_rank_has(sandboxed: Executor) -> None:
    for _ in range(2):  # the second run's store was staged while the first ran
        result = run(sandboxed, ATTACK, nproc=2, timeout_s=30)
        assert result.status is RunStatus.OK, result
        seen = [json.loads(rank.stdout) for rank in result.ranks]
        for view in seen:
            assert len(view["store"]) == 1, view
            assert view["kill"] == 1, view  # EPERM: the rank may not signal it
            threads = view["store_threads"]
            assert len(threads) >= 2, threads  # the main thread and the server's
            store_uid = identities.store_uid(view["uid"])
            assert all(t["uid"] == store_uid for t in threads), (view["uid"], threads)
            assert all(t["seccomp"] == 2 and t["nnp"] == 1 for t in threads), threads
        assert identities.in_range(seen[0]["uid"])
        assert not identities.in_range(identities.store_uid(seen[0]["uid"]))

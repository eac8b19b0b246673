"""Real gloo ranks: what distributed snippets really do, rank by rank."""

from __future__ import annotations

import json
import re

import pytest

from executor.contract import RankResult, RankStatus, RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor


def test_all_reduce_gives_every_rank_the_sum(executor: Executor) -> None:
    result = run(
        executor,
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.tensor([dist.get_rank() + 1.0])\n"
        "dist.all_reduce(t)\n"
        "print(dist.get_rank(), t.item())\n"
        "dist.destroy_process_group()\n",
        nproc=3,
    )
    assert result.status is RunStatus.OK
    assert [r.stdout for r in result.ranks] == ["0 6.0\n", "1 6.0\n", "2 6.0\n"]
    assert all(r.exit_code == 0 and r.status is RankStatus.OK for r in result.ranks)


def test_ranks_start_with_the_variables_torchrun_sets(executor: Executor) -> None:
    names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]
    code = f"import os, json\nprint(json.dumps({{n: os.environ.get(n) for n in {names!r}}}))\n"
    result = run(executor, code, nproc=2)
    seen = [json.loads(r.stdout) for r in result.ranks]
    assert [s["RANK"] for s in seen] == ["0", "1"]
    assert [s["LOCAL_RANK"] for s in seen] == ["0", "1"]
    assert {s["WORLD_SIZE"] for s in seen} == {"2"}
    assert {s["LOCAL_WORLD_SIZE"] for s in seen} == {"2"}
    assert all(s["MASTER_ADDR"] and s["MASTER_PORT"] for s in seen)


def test_distributed_sampler_splits_indices_by_rank(executor: Executor) -> None:
    code = (
        "import torch.distributed as dist\n"
        "from torch.utils.data import DistributedSampler\n"
        "dist.init_process_group('gloo')\n"
        "print(list(DistributedSampler(range(10), shuffle=False)))\n"
    )
    result = run(executor, code, nproc=2)
    assert [r.stdout for r in result.ranks] == ["[0, 2, 4, 6, 8]\n", "[1, 3, 5, 7, 9]\n"]


def test_ddp_averages_gradients_across_ranks(executor: Executor) -> None:
    code = (
        "import torch, torch.distributed as dist, torch.nn as nn\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "dist.init_process_group('gloo')\n"
        "rank = dist.get_rank()\n"
        "model = DDP(nn.Linear(1, 1, bias=False))\n"
        "model(torch.tensor([[rank + 1.0]])).sum().backward()\n"
        "print(model.module.weight.grad.item())\n"
    )
    result = run(executor, code, nproc=2)
    # Local gradients are 1 and 2; DDP all-reduces and averages them on every rank.
    assert [r.stdout for r in result.ranks] == ["1.5\n", "1.5\n"]


def test_a_deadlock_times_out_keeping_what_each_rank_printed(executor: Executor) -> None:
    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "print('before', dist.get_rank(), flush=True)\n"
        "if dist.get_rank() == 0:\n"
        "    dist.all_reduce(torch.ones(1))  # rank 1 never joins\n"
        "else:\n"
        "    import time; time.sleep(60)\n"
    )
    result = run(executor, code, nproc=2, timeout_s=2)
    assert result.status is RunStatus.TIMEOUT
    assert [r.status for r in result.ranks] == [RankStatus.TIMEOUT, RankStatus.TIMEOUT]
    assert [r.stdout for r in result.ranks] == ["before 0\n", "before 1\n"]
    assert 2000 <= result.duration_ms < 5000


def test_an_exception_on_one_rank_is_reported_with_type_and_message(executor: Executor) -> None:
    code = (
        "import os\n"
        "if os.environ['RANK'] == '1':\n"
        "    raise ValueError('bad shard on rank 1')\n"
        "print('fine')\n"
    )
    result = run(executor, code, nproc=2)
    assert result.status is RunStatus.ERROR
    ok, failed = result.ranks
    assert ok.status is RankStatus.OK and ok.stdout == "fine\n"
    assert failed.status is RankStatus.ERROR and failed.exit_code == 1
    assert failed.exception is not None
    assert (failed.exception.type, failed.exception.message) == (
        "ValueError",
        "bad shard on rank 1",
    )
    assert 'snippet.py", line 3' in failed.stderr  # the real file's path, as torchrun shows
    # The traceback starts at the snippet, as `python snippet.py` prints it: no harness frame.
    frames = [line for line in failed.stderr.splitlines() if line.lstrip().startswith("File ")]
    assert frames and all("snippet.py" in frame for frame in frames), failed.stderr


def test_sys_exit_codes_are_kept_per_rank(executor: Executor) -> None:
    code = "import os, sys\nsys.exit(int(os.environ['RANK']) * 3)\n"
    result = run(executor, code, nproc=2)
    assert [(r.status, r.exit_code) for r in result.ranks] == [
        (RankStatus.OK, 0),
        (RankStatus.ERROR, 3),
    ]
    assert all(r.exception is None for r in result.ranks)


def test_a_syntax_error_is_reported_like_python_would(executor: Executor) -> None:
    result = run(executor, "print('unclosed'\n", nproc=1)
    assert result.ranks[0].exception is not None
    assert result.ranks[0].exception.type == "SyntaxError"
    assert "SyntaxError" in result.ranks[0].stderr


def test_several_ranks_keep_stdout_and_stderr_apart(executor: Executor) -> None:
    code = (
        "import os, sys\n"
        "rank = os.environ['RANK']\n"
        "for i in range(3):\n"
        "    print(f'rank {rank} line {i}')\n"
        "print(f'warning from {rank}', file=sys.stderr)\n"
    )
    result = run(executor, code, nproc=4)
    for rank in result.ranks:
        lines = [f"rank {rank.rank} line {i}" for i in range(3)]
        assert rank.stdout == "\n".join(lines) + "\n"
        assert rank.stderr == f"warning from {rank.rank}\n"


def test_a_snippet_that_calls_mp_spawn_itself_works(executor: Executor) -> None:
    code = (
        "import torch.multiprocessing as mp\n"
        "def work(i):\n"
        "    print('child', i, flush=True)\n"
        "if __name__ == '__main__':\n"
        "    mp.spawn(work, nprocs=2)\n"
        "    print('joined')\n"
    )
    # The children are real spawned interpreters that import torch cold, as under torchrun.
    result = run(executor, code, nproc=1, timeout_s=40)
    assert result.status is RunStatus.OK, result
    assert sorted(result.ranks[0].stdout.splitlines()) == ["child 0", "child 1", "joined"]


def test_the_result_says_where_it_was_observed(executor: Executor) -> None:
    result = run(executor, "print(1)", nproc=2)
    assert result.environment is not None
    assert result.environment.backend == "gloo"
    assert result.environment.device == "cpu"
    assert result.environment.nproc == 2
    assert result.environment.torch.startswith("2.")
    assert result.observed_at is not None and result.observed_at.endswith("Z")
    assert result.cached is False


def test_output_of_a_non_daemon_thread_is_kept_as_python_would(executor: Executor) -> None:
    code = (
        "import threading, time\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    print('from the thread')\n"
        "threading.Thread(target=late).start()\n"
        "print('main done')\n"
    )
    result = run(executor, code, nproc=1)
    assert result.ranks[0].stdout == "main done\nfrom the thread\n"


def test_a_failing_rank_stops_its_peers_as_torchrun_does(executor: Executor) -> None:
    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "if dist.get_rank() == 1:\n"
        "    raise RuntimeError('rank 1 crashed before the collective')\n"
        "dist.all_reduce(torch.ones(1))  # rank 0 waits for a peer that is gone\n"
    )
    result = run(executor, code, nproc=2, timeout_s=20)
    assert result.status is RunStatus.ERROR  # not a 20 s timeout
    assert result.duration_ms < 10_000
    waiting, crashed = result.ranks
    assert crashed.exception is not None and crashed.exception.type == "RuntimeError"
    # The waiting rank either sees the lost peer itself or is stopped (SIGTERM) at once.
    assert waiting.status in {RankStatus.ERROR, RankStatus.KILLED}


def test_a_rank_ignoring_the_stop_is_killed_at_the_deadline_and_the_run_is_an_error(
    executor: Executor,
) -> None:
    """The SIGTERM grace after a failure (torchrun: 30 s) ends at the run's deadline; the run
    failed, it did not hang."""
    code = (
        "import os, signal, time\n"
        "if os.environ['RANK'] == '0':\n"
        "    signal.signal(signal.SIGTERM, lambda *_: print('SIGTERM ignored', flush=True))\n"
        "    print('waiting', flush=True)\n"
        "    time.sleep(60)\n"
        "time.sleep(0.5)\n"
        "raise SystemExit(3)\n"
    )
    result = run(executor, code, nproc=2, timeout_s=4)
    assert result.status is RunStatus.ERROR, result
    ignoring, failed = result.ranks
    assert failed.exit_code == 3
    assert ignoring.stdout == "waiting\nSIGTERM ignored\n"
    assert ignoring.status is RankStatus.KILLED and ignoring.exit_code is None
    assert result.duration_ms >= 3_500  # it got the grace up to the deadline


PEER_FAILS = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1000)
dist.all_reduce(t)
if dist.get_rank() == 1:
    raise RuntimeError("rank 1 fails")
dist.all_reduce(t)
"""


def test_a_peer_that_failed_is_seen_to_close_its_connection_as_under_torchrun(
    executor: Executor,
) -> None:
    """Under torchrun the survivor of a failed peer reads "Connection closed by peer"; a rank
    that exits at once with bytes unread used to reset the connection instead (about a third
    of the runs under load said "Connection reset by peer")."""
    for _ in range(6):
        result = run(executor, PEER_FAILS, nproc=2)
        survivor, failed = result.ranks
        assert (failed.status, failed.exit_code) == (RankStatus.ERROR, 1), failed
        assert "Connection closed by peer" in survivor.stderr, survivor.stderr
        assert "reset by peer" not in survivor.stderr


# Rank 0 looks up rank 1's address late, so that rank 1 (when it is the side that connects:
# gloo lets the higher listening port connect) has joined the group and left before rank 0 has
# connected its end. Under torchrun rank 1's exit takes a second (the interpreter's teardown)
# and rank 0 joins in time; a rank that left at once made rank 0's init_process_group fail
# ("Gloo connectFullMesh failed ... Connection closed by peer") in about 2 of 3 such runs.
LATE_JOINER = """
import os, re, time
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, False)
PORT = re.compile(rb"\\x02\\x00(..)\\x7f\\x00\\x00\\x01", re.S)  # AF_INET, port, 127.0.0.1


def port(address):
    # gloo compares the ports as stored (network order) read as a native little-endian int
    return int.from_bytes(PORT.search(address).group(1), "little")


class LateLookup(dist.Store):
    def __init__(self):
        super().__init__()
        self.own = b""

    def set(self, key, value):
        self.own = bytes(value)
        store.set(key, value)

    def get(self, key):
        value = store.get(key)
        if key.endswith("/1") and port(bytes(value)) > port(self.own):
            store.wait(["left"])
            time.sleep(0.3)
            print("rank 1 had left", flush=True)
        return value

    def wait(self, keys, *timeout):
        store.wait(keys, *timeout)

    def check(self, keys):
        return store.check(keys)

    def add(self, key, amount):
        return store.add(key, amount)


mine = LateLookup() if rank == 0 else store
dist.init_process_group("gloo", store=mine, rank=rank, world_size=world)
if rank == 0:
    dist.barrier()
else:
    store.set("left", "1")
"""


def runs_where_rank_1_left_first(
    executor: Executor, code: str, wanted: int = 4
) -> list[RankResult]:
    """Rank 0's result in the first `wanted` runs of code where rank 1 left before rank 0 had
    connected to it (rank 1 always ends well)."""
    provoked: list[RankResult] = []
    for _ in range(24):  # which rank connects is drawn per run (ports): half the runs provoke
        late, left = run(executor, code, nproc=2).ranks
        assert (left.status, left.exit_code) == (RankStatus.OK, 0), left
        if "rank 1 had left" in late.stdout:
            provoked.append(late)
            if len(provoked) == wanted:
                break
    assert len(provoked) == wanted, "rank 1 was the side that connects in too few runs"
    return provoked


def test_a_rank_that_leaves_lets_a_slower_peer_finish_joining_first(executor: Executor) -> None:
    """Parity case barrier_one_rank failed under load: rank 1 left right after
    init_process_group, before rank 0 had connected to it. Now a leaving rank waits until no
    peer is still joining; rank 0 joins, and its barrier finds rank 1 gone, as under torchrun."""
    for late in runs_where_rank_1_left_first(executor, LATE_JOINER):
        assert "connectFullMesh" not in late.stderr, late.stderr
        assert "Connection closed by peer" in late.stderr.splitlines()[-1], late.stderr


# LATE_JOINER's late lookup, but rank 1 destroys its group once joined, as the snippets that end
# in destroy_process_group() do: broadcast-from-rank-1 (3 ranks, src=2) under load failed in
# 14 of 844 runs, a rank that had received the broadcast destroying the group while rank 0 was
# still connecting to it (rank 0: "Gloo connectFullMesh failed ... Connection closed by peer";
# the source then read "Connection reset by peer" from rank 0).
DESTROYS_WHILE_A_PEER_JOINS = LATE_JOINER.replace(
    """if rank == 0:
    dist.barrier()
else:
    store.set("left", "1")
""",
    """if rank == 1:
    store.set("left", "1")
dist.destroy_process_group()
print("done", flush=True)
""",
)


def test_a_rank_that_destroys_its_group_lets_a_slower_peer_finish_joining_first(
    executor: Executor,
) -> None:
    """destroy_process_group() closes the group's connections at once: before, a peer still
    connecting its mesh to this rank failed in init_process_group. Now the destroy waits (at
    most 2 s) until no peer is still joining, and every rank ends as the snippet says."""
    assert DESTROYS_WHILE_A_PEER_JOINS != LATE_JOINER
    for late in runs_where_rank_1_left_first(executor, DESTROYS_WHILE_A_PEER_JOINS):
        assert "connectFullMesh" not in late.stderr, late.stderr
        assert (late.status, late.stdout.splitlines()[-1]) == (RankStatus.OK, "done"), late


def test_an_error_in_destroy_process_group_shows_no_frame_of_the_executors(
    executor: Executor,
) -> None:
    """The wait before a destroy wraps it (leaving.py): its frame is not the learner's."""
    code = "import torch.distributed as dist\nprint(dist.destroy_process_group.__name__)\n"
    result = run(executor, code + "dist.destroy_process_group()\n", nproc=1)
    (rank,) = result.ranks
    assert (rank.status, rank.stdout) == (RankStatus.ERROR, "destroy_process_group\n"), rank
    frames = re.findall(r'File "([^"]+)", line \d+, in (\S+)', rank.stderr)
    assert frames[0] == ("/tmp/snippet.py", "<module>"), rank.stderr
    assert all("executor" not in path for path, _ in frames), rank.stderr


def test_a_printed_stack_starts_at_the_snippet(executor: Executor) -> None:
    """traceback.print_stack (and logging's stack_info) walk the frames below the snippet:
    they once listed the harness (executor/rank.py, the zygote) before the learner's own."""
    code = "import traceback\ndef where():\n    traceback.print_stack()\nwhere()\n"
    result = run(executor, code, nproc=1)
    frames = [line for line in result.ranks[0].stderr.splitlines() if "File " in line]
    assert len(frames) == 2 and all("snippet.py" in frame for frame in frames), frames

"""Ranks behave as torchrun's do: own random state, a real script file, atexit, spawned children.

The parity suite (tests/parity) compares whole runs with a real torchrun; these pin each
mechanism on the executor alone, quickly.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from executor.contract import RankStatus, RunRequest, RunResult, RunStatus
from executor.runner import Executor

pytestmark = pytest.mark.executor


def launch(runner: Executor, code: str, nproc: int = 2, **fields: object) -> RunResult:
    """Run code uncached with extra request fields (launcher, timeout_s)."""
    request = RunRequest.model_validate(
        {"code": code, "nproc": nproc, "timeout_s": 20, "use_cache": False, **fields}
    )
    return asyncio.run(runner.run(request))


DRAWS = """
import json, random, numpy, torch
print(json.dumps([torch.rand(1).item(), random.random(), float(numpy.random.rand()),
                  torch.nn.Linear(2, 1).weight.sum().item()]))
"""


def test_unseeded_draws_differ_per_rank_and_per_run(executor: Executor) -> None:
    first, second = launch(executor, DRAWS), launch(executor, DRAWS)
    draws = [json.loads(rank.stdout) for run in (first, second) for rank in run.ranks]
    for generator in range(4):  # torch, random, numpy, an unseeded nn.Linear
        values = [row[generator] for row in draws]
        assert len(set(values)) == 4, (generator, values)
    assert all(rank.unseeded_random for run in (first, second) for rank in run.ranks)


def test_a_seeded_snippet_is_not_flagged_as_drawing_unseeded_randomness(
    executor: Executor,
) -> None:
    result = launch(executor, "import torch\ntorch.manual_seed(0)\nprint(torch.rand(1).item())\n")
    assert [rank.stdout for rank in result.ranks] == ["0.49625658988952637\n"] * 2
    assert not any(rank.unseeded_random for rank in result.ranks)


def test_the_snippet_is_a_real_file_and_atexit_handlers_run(executor: Executor) -> None:
    code = (
        "import atexit, os\n"
        "atexit.register(lambda: print('bye from', os.environ['RANK']))\n"
        "print(open(__file__).read().splitlines()[0])\n"
    )
    result = launch(executor, code)
    assert result.status is RunStatus.OK, result
    assert [rank.stdout for rank in result.ranks] == [
        "import atexit, os\nbye from 0\n",
        "import atexit, os\nbye from 1\n",
    ]


def test_a_rank_exit_runs_the_snippets_finalizers_but_not_the_warm_parents(
    executor: Executor,
) -> None:
    """The preload's own finalizers (torch's op libraries, 174 of them) only undo registrations
    in a process about to _exit: running them at every rank's exit cost 45-100 ms per run."""
    code = (
        "import weakref\n"
        "class Thing: pass\n"
        "thing = Thing()\n"
        "weakref.finalize(thing, print, 'finalized at exit')\n"
        "print('finalizers to run at exit:', sum(f.atexit for f in weakref.finalize._registry))\n"
    )
    result = launch(executor, code)
    assert result.status is RunStatus.OK, result
    expected = "finalizers to run at exit: 1\nfinalized at exit\n"
    assert [rank.stdout for rank in result.ranks] == [expected] * 2


def test_every_rank_leads_a_session_of_its_own_as_torchrun_workers_do(
    sandboxed: Executor,
) -> None:
    # torchrun starts each worker with start_new_session: kill(0, ...) in a rank reaches its own
    # process tree only, and the launcher's SIGTERM stop (killpg) reaches the rank's children.
    # Three ranks on two siblings: at least one is forked by the run's own init.
    code = "import os\nprint(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid())\n"
    result = launch(sandboxed, code, nproc=3)
    assert result.status is RunStatus.OK, result
    assert [rank.stdout for rank in result.ranks] == ["True True\n"] * 3


def test_torchrun_variables_are_set_and_threads_follow_omp_num_threads(
    executor: Executor,
) -> None:
    code = "import os, json, torch\nprint(json.dumps([dict(os.environ), torch.get_num_threads()]))"
    result = launch(executor, code)
    environments = [json.loads(rank.stdout) for rank in result.ranks]
    for rank, (env, threads) in enumerate(environments):
        assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"]) == (str(rank), str(rank), "2")
        assert (env["ROLE_NAME"], env["GROUP_WORLD_SIZE"]) == ("default", "1")
        assert env["TORCHELASTIC_USE_AGENT_STORE"] == "True"
        assert (env["OMP_NUM_THREADS"], threads) == ("1", 1)
    assert environments[0][0]["TORCHELASTIC_RUN_ID"] == environments[1][0]["TORCHELASTIC_RUN_ID"]


def test_an_exception_reports_its_base_classes(executor: Executor) -> None:
    code = "import torch.distributed as dist\nraise dist.DistBackendError('peer gone')\n"
    result = launch(executor, code, nproc=1)
    exception = result.ranks[0].exception
    assert exception is not None and exception.type == "DistBackendError"
    assert exception.is_a("RuntimeError") and exception.is_a("torch.distributed.DistBackendError")
    assert not exception.is_a("ValueError")


SPAWN = """
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29555", rank=rank,
                            world_size=world)
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)
    print(f"worker {rank} sum {total.item()} RANK set: {'RANK' in os.environ}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
    print("main done", "RANK" in os.environ)
"""


def test_python_launch_runs_the_mp_spawn_tutorial_with_real_spawned_children(
    executor: Executor,
) -> None:
    result = launch(executor, SPAWN, nproc=2, launcher="python", timeout_s=40)
    assert result.status is RunStatus.OK, result
    assert [rank.status for rank in result.ranks] == [RankStatus.OK]  # one process
    lines = sorted(result.ranks[0].stdout.splitlines())
    assert lines == [
        "main done False",
        "worker 0 sum 3.0 RANK set: False",
        "worker 1 sum 3.0 RANK set: False",
    ]
    assert result.environment is not None and result.environment.launcher == "python"


HASH_ORDER = "print(list({f'word{i}' for i in range(30)}))\n"


def test_each_rank_has_its_own_hash_secret_and_it_changes_between_runs(
    executor: Executor,
) -> None:
    if executor.info.get("siblings", 0) < 1:
        pytest.skip("no sibling warm parents (trusted mode): ranks share one hash secret")
    runs = [launch(executor, HASH_ORDER) for _ in range(10)]  # 3 parents: all alike p < 1e-4
    # Two ranks draw two different warm parents: their set orders differ on every run...
    assert all(run.ranks[0].stdout != run.ranks[1].stdout for run in runs)
    # ...and which parent a rank gets is drawn per run, so rank 0's order changes too.
    assert len({run.ranks[0].stdout for run in runs}) > 1


def test_output_is_unbuffered_as_under_torchrun_so_a_kill_keeps_it(executor: Executor) -> None:
    code = (
        "import os, signal\n"
        "print('partial', end='')\n"
        "if os.environ['RANK'] == '1':\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "print(' line')\n"
    )
    result = launch(executor, code)
    assert [rank.stdout for rank in result.ranks] == ["partial line\n", "partial"]
    assert result.ranks[1].status is RankStatus.KILLED and result.ranks[1].exit_code == -9


def test_more_ranks_than_warm_parents_share_hash_secrets(executor: Executor) -> None:
    """Pins a documented difference (docs/executor.md, "Executor fidelity"): with N sibling warm
    parents, a run of more than N + 1 ranks has ranks that share a hash secret (torchrun: never)."""
    parents = 1 + int(executor.info.get("siblings", 0))
    result = launch(executor, HASH_ORDER, nproc=parents + 1)
    orders = [rank.stdout for rank in result.ranks]
    assert len(set(orders)) <= parents < len(orders)

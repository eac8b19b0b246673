"""CPU and wall of plain 2-rank runs through a private sandboxed executor, one after another.

    .venv/bin/python bench/run_cpu.py [--runs 40]

Starts the executor as `ranklab verify` does (`embedded.temporary_executor`), then sends `--runs`
never-cached runs of a small all_reduce through the HTTP client and prints the start's wall and
CPU, then the CPU a run costs (verify, executor, init, store, ranks: a cpuacct cgroup holding
this process and all it starts; where the host has no cgroup v1 cpuacct, this process's own and
its children's rusage, which misses what the warm parents fork) and the median wall. To compare
two checkouts, run it from each in turn, alternating, and compare CPU first: the load disturbs
it least. Numbers, not checks: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from verify_profile import _cpu_s, cpu_group  # run as a script: bench/ is on sys.path

from app import embedded
from app.executor_client import HttpExecutorClient
from executor.contract import RunRequest, RunStatus

PLAIN = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(2) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(dist.get_rank(), t.tolist())
dist.destroy_process_group()
"""


def measure(runs: int, group: Path | None) -> None:
    before, started = _cpu_s(group), time.monotonic()
    with embedded.temporary_executor(slots=2) as url:
        warm, warm_cpu = time.monotonic(), _cpu_s(group)
        print(f"start: {warm - started:.1f} s wall, {warm_cpu - before:.1f} s CPU", flush=True)
        client = HttpExecutorClient(url)
        walls = []
        for _ in range(runs):
            begun = time.monotonic()
            result = client.run(RunRequest(code=PLAIN, nproc=2, use_cache=False, timeout_s=30))
            walls.append(time.monotonic() - begun)
            assert result.status is RunStatus.OK, result
        spent = _cpu_s(group) - warm_cpu
    walls.sort()
    print(
        f"{runs} runs: {1000 * spent / runs:.0f} ms CPU a run, median wall "
        f"{1000 * walls[runs // 2]:.0f} ms; load {os.getloadavg()[0]:.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    with cpu_group(f"ranklab-run-cpu-{os.getpid()}") as group:
        measure(args.runs, group)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

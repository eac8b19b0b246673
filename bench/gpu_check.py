"""Run the executor's GPU path on a real GPU host and print what each case did.

Not a test (CI has no GPU): a script for a lent GPU machine, whose figures go into the README's
GPU section. Every case goes through `executor.runner.Executor`, sandboxed as in production
(uid per slot, seccomp, only the run's own device nodes), unless `--trusted` is given.

    python bench/gpu_check.py [--trusted] [--json OUT.json]

It prints one line per case: what was asked, the status the executor returned, the expected
status, each rank's first output line, and the time; then the host facts (kernel, cgroup
version, driver, torch) and a warm-run timing of a 2-rank gloo DDP step on that host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from executor.contract import RunRequest, RunResult
from executor.runner import Executor
from executor.settings import ExecutorSettings


@dataclass(frozen=True)
class Case:
    name: str
    request: RunRequest
    expect: str  # the run status this case must end with
    must_print: str = ""  # a text some rank's stdout or stderr must hold


CUDA_MATMUL = """
import torch
a = torch.randn(512, 512, device="cuda")
print("device", torch.cuda.get_device_name(0), "count", torch.cuda.device_count())
print("matmul ok", float((a @ a).sum().isfinite()))
"""

NCCL_ALL_REDUCE = """
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
t = torch.ones(4, device="cuda") * (rank + 1)
dist.all_reduce(t)
print("rank", rank, "sum", t.tolist(), "backend", dist.get_backend())
dist.destroy_process_group()
"""

DDP_STEP = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 2).cuda(local), device_ids=[local])
loss = model(torch.randn(16, 8, device="cuda")).sum()
loss.backward()
print("rank", dist.get_rank(), "grad", round(float(model.module.weight.grad.abs().sum()), 4))
dist.destroy_process_group()
"""

DATA_PARALLEL = """
import torch
model = torch.nn.DataParallel(torch.nn.Linear(10, 5).cuda())
print("out", tuple(model(torch.randn(16, 10).cuda()).shape), "gpus", torch.cuda.device_count())
"""

SYNC_BATCH_NORM = """
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.BatchNorm1d(4)))
net = torch.nn.parallel.DistributedDataParallel(net.cuda(local), device_ids=[local])
out = net(torch.randn(8, 4, device="cuda"))
print("rank", dist.get_rank(), type(net.module[0]).__name__, tuple(out.shape))
dist.destroy_process_group()
"""

GLOO_SHARING_ONE_GPU = """
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(2, device="cuda") * (dist.get_rank() + 1)
dist.all_reduce(t)
print("rank", dist.get_rank(), "sum", t.tolist(), "visible", torch.cuda.device_count())
dist.destroy_process_group()
"""

OUT_OF_MEMORY = """
import torch
free, total = torch.cuda.mem_get_info()
x = torch.empty(int(total * 2), dtype=torch.uint8, device="cuda")
print("allocated", x.numel())
"""

DEVICE_NODES = """
import os
print("nodes", sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")))
print("visible", os.environ.get("CUDA_VISIBLE_DEVICES"))
"""

CPU_RUN_ON_GPU_HOST = """
import os, torch
print("nodes", sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")))
print("cuda available", torch.cuda.is_available())
"""

# Verify's early stop of a hang (stop_when_stuck) on this host's kernel and cgroups: rank 0
# waits in all_reduce, rank 1 in barrier, gloo matches neither.
GLOO_DEADLOCK = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))
else:
    dist.barrier()
print("never printed")
"""

GLOO_DDP_STEP = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 2))
model(torch.randn(4, 8)).sum().backward()
print("rank", dist.get_rank(), "ok")
dist.destroy_process_group()
"""


def cases(gpu_count: int) -> list[Case]:
    """The GPU path's cases, sized to the host's GPUs."""
    two = gpu_count >= 2
    return [
        Case(
            "cuda init + matmul", RunRequest(code=CUDA_MATMUL, nproc=1, gpus=1), "ok", "matmul ok"
        ),
        Case(
            "1-rank NCCL all_reduce",
            RunRequest(code=NCCL_ALL_REDUCE, nproc=1, gpus=1, backend="nccl"),
            "ok",
            "backend nccl",
        ),
        Case(
            "1-rank DDP step on NCCL",
            RunRequest(code=DDP_STEP, nproc=1, gpus=1, backend="nccl"),
            "ok",
            "grad",
        ),
        Case(
            "DataParallel, launcher python",
            RunRequest(code=DATA_PARALLEL, nproc=1, gpus=1, launcher="python"),
            "ok",
            "out (16, 5)",
        ),
        Case(
            "SyncBatchNorm, 1 rank, NCCL",
            RunRequest(code=SYNC_BATCH_NORM, nproc=1, gpus=1, backend="nccl"),
            "ok",
            "SyncBatchNorm",
        ),
        Case(
            "2 gloo ranks sharing 1 GPU",
            RunRequest(code=GLOO_SHARING_ONE_GPU, nproc=2, gpus=1, backend="gloo"),
            "ok",
            "sum [3.0, 3.0]",
        ),
        Case(
            "2-rank NCCL all_reduce",
            RunRequest(code=NCCL_ALL_REDUCE, nproc=2, gpus=2, backend="nccl"),
            "ok" if two else "rejected",
            "sum [3.0" if two else "",
        ),
        Case(
            "allocation past GPU memory",
            RunRequest(code=OUT_OF_MEMORY, nproc=1, gpus=1),
            "error",
            "OutOfMemoryError",
        ),
        Case(
            "device nodes of a 1-GPU run",
            RunRequest(code=DEVICE_NODES, nproc=1, gpus=1),
            "ok",
            "nodes",
        ),
        # backend auto on a GPU host gives each rank a GPU, as torchrun there would use NCCL:
        # a gloo run asks for no GPU and must see none.
        Case(
            "a gloo run on the GPU host",
            RunRequest(code=CPU_RUN_ON_GPU_HOST, nproc=1, backend="gloo"),
            "ok",
            "cuda available False",
        ),
        Case(
            "gloo deadlock, verify's early stop",
            RunRequest(code=GLOO_DEADLOCK, nproc=2, backend="gloo", stop_when_stuck=True),
            "timeout",
            "stopped when stuck",
        ),
    ]


def describe(result: RunResult) -> str:
    """One short line per rank: its status and the first line it printed (or its exception)."""
    parts = []
    for rank in result.ranks:
        text = (rank.stdout.strip().splitlines() or [""])[0]
        if rank.exception:
            text = f"{rank.exception.type}: {rank.exception.message[:80]}"
        parts.append(f"r{rank.rank} {rank.status}: {text[:110]}")
    if result.message:
        parts.append(f"message: {result.message[:160]}")
    if result.stopped_when_stuck:
        parts.append("stopped when stuck")
    return " | ".join(parts)


def host_facts() -> dict[str, str]:
    """Kernel, cgroup version, driver and GPUs, read without CUDA in this process."""
    controllers = Path("/sys/fs/cgroup/cgroup.controllers")
    facts = {
        "kernel": platform.release(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "cgroup": f"v2 ({controllers.read_text().strip()})" if controllers.exists() else "v1",
    }
    try:
        facts["nvidia-smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    except OSError as error:
        facts["nvidia-smi"] = f"unavailable: {error}"
    return facts


def warm_parent_huge_pages() -> str:
    """AnonHugePages of each executor.zygote process: the warm parents (executor/hugepages.py
    collapses their heap) and the cells they staged."""
    found = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"executor.zygote" not in status.read_bytes():
                continue
            rollup = (status.parent / "smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("AnonHugePages:"):
                found.append(f"{status.parent.name}: {line.split(':')[1].strip()}")
    return ", ".join(found) or "none found"


async def main() -> int:
    """Start a sandboxed executor, run each case, print the table and a warm timing."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--trusted", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--timing-runs", type=int, default=12)
    args = parser.parse_args()
    for key, value in host_facts().items():
        print(f"{key}: {value}", flush=True)
    settings = ExecutorSettings(trusted=args.trusted, max_concurrent_runs=2)
    executor = Executor(settings)
    started = time.monotonic()
    await executor.start()
    print(f"executor ready in {time.monotonic() - started:.1f} s: {executor.info}", flush=True)
    gpu_count = len(executor.gpus.gpus)
    print(f"GPUs the executor holds: {gpu_count}", flush=True)
    print(
        f"huge pages of the warm parents and their staged forks: {warm_parent_huge_pages()}",
        flush=True,
    )
    rows, failures = [], 0
    for case in cases(gpu_count):
        began = time.monotonic()
        try:
            result = await executor.run(case.request.model_copy(update={"timeout_s": 60.0}))
            status, detail = str(result.status), describe(result)
            printed = "".join(r.stdout + r.stderr for r in result.ranks) + (result.message or "")
            printed += " stopped when stuck" if result.stopped_when_stuck else ""
        except Exception as error:  # a refusal raised before the run (LimitViolation)
            status, detail, printed = "rejected", f"{type(error).__name__}: {error}", str(error)
        elapsed = time.monotonic() - began
        good = status == case.expect and case.must_print in printed
        failures += not good
        rows.append(
            {
                "case": case.name,
                "status": status,
                "expect": case.expect,
                "pass": good,
                "seconds": round(elapsed, 2),
                "detail": detail,
            }
        )
        print(
            f"{'PASS' if good else 'FAIL'} {case.name}: {status} (expect {case.expect}) "
            f"{elapsed:.2f} s — {detail}",
            flush=True,
        )
    timings = []
    for _ in range(args.timing_runs):
        began = time.monotonic()
        result = await executor.run(RunRequest(code=GLOO_DDP_STEP, nproc=2, use_cache=False))
        timings.append((time.monotonic() - began) * 1000)
        if result.status != "ok":
            print("warm timing run failed:", describe(result))
    warm = timings[2:] or timings
    print(
        f"warm 2-rank gloo DDP step on this host: p50 {statistics.median(warm):.0f} ms "
        f"(runs {len(warm)}, min {min(warm):.0f}, max {max(warm):.0f})",
        flush=True,
    )
    executor.close()
    if args.json:
        args.json.write_text(
            json.dumps({"host": host_facts(), "cases": rows, "warm_ddp_ms": timings}, indent=2)
        )
    print(f"{len(rows) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(asyncio.run(main()))

"""Benchmark the executor against a cold torchrun of the same snippet, in one run.

Starts `executor serve` as its own process (sandboxed, as in production), measures through HTTP:
2- and 4-rank DDP forward/backward latency, a cached repeat, throughput from 4 concurrent
clients; then times a cold `torchrun --standalone` of the same snippet, and prints both side by
side with their ratios and per-rank memory.

    .venv/bin/python bench/bench_executor.py [--runs 30] [--throughput-runs 500] [--trusted]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
SNIPPET = """\
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(8, 16) + rank).pow(2).mean()
loss.backward()
optimizer.step()
memory = {}
for line in open("/proc/self/smaps_rollup"):
    key, _, value = line.partition(":")
    if key in ("Rss", "Private_Clean", "Private_Dirty"):
        memory[key] = int(value.split()[0])
private = memory["Private_Clean"] + memory["Private_Dirty"]
print(f"rank {rank} loss {loss.item():.4f} rss_kb {memory['Rss']} private_kb {private}")
dist.destroy_process_group()
"""
MEMORY = re.compile(r"rss_kb (\d+) private_kb (\d+)")
TARGETS = {"ddp2_p50_ms": 150, "ddp4_p50_ms": 250, "cached_p50_ms": 10, "runs_per_s": 10}


def main() -> int:
    """Run every measurement and print the comparison table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30, help="timed runs per latency figure")
    parser.add_argument("--throughput-runs", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--torchrun-runs", type=int, default=3)
    parser.add_argument("--trusted", action="store_true", help="benchmark without the sandbox")
    args = parser.parse_args()

    server, base = start_service(args.trusted)
    try:
        health = httpx.get(f"{base}/healthz").json()
        with httpx.Client(base_url=base, timeout=60) as client:
            warm2 = latencies(client, 2, args.runs)
            warm4 = latencies(client, 4, args.runs)
            cached = cached_latencies(client, args.runs * 2)
        rate, failures, elapsed = throughput(base, args.clients, args.throughput_runs)
    finally:
        server.terminate()
        server.wait(10)
    cold2 = cold_torchrun(2, args.torchrun_runs)
    cold4 = cold_torchrun(4, args.torchrun_runs)
    report(health, warm2, warm4, cached, (rate, failures, elapsed), cold2, cold4, args)
    return 0


def start_service(trusted: bool) -> tuple[subprocess.Popen[bytes], str]:
    """Start `executor serve` on a free port and wait until /healthz says it is warm."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "executor.cli", "executor", "serve", "--port", str(port)]
    command += ["--log-level", "warning"]
    if trusted:
        command.append("--trusted")
    env = {**os.environ, "RANKLAB_EXECUTOR_QUEUE_LIMIT": "64"}
    server = subprocess.Popen(command, cwd=REPO, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return server, base
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.kill()
    raise SystemExit("the executor did not become healthy in 180 s")


def post_run(client: httpx.Client, nproc: int, use_cache: bool) -> tuple[float, dict[str, Any]]:
    body = {"code": SNIPPET, "nproc": nproc, "timeout_s": 30, "use_cache": use_cache}
    started = time.perf_counter()
    response = client.post("/v1/runs", json=body)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response.json()


def latencies(client: httpx.Client, nproc: int, runs: int) -> dict[str, Any]:
    """Time uncached runs end to end through HTTP."""
    post_run(client, nproc, use_cache=False)  # one untimed run: first-touch page faults
    times, memory = [], []
    for _ in range(runs):
        elapsed, result = post_run(client, nproc, use_cache=False)
        if result["status"] != "ok":
            raise SystemExit(f"benchmark snippet failed: {json.dumps(result)[:2000]}")
        times.append(elapsed)
        memory.extend(rank_memory(result["ranks"]))
    return {"times": times, "memory": memory}


def cached_latencies(client: httpx.Client, runs: int) -> list[float]:
    """Time repeats that the cache answers."""
    post_run(client, 2, use_cache=True)
    return [post_run(client, 2, use_cache=True)[0] for _ in range(runs)]


def throughput(base: str, clients: int, total: int) -> tuple[float, int, float]:
    """Run `total` uncached 2-rank runs from `clients` concurrent clients; count failures."""
    counter = iter(range(total))
    lock = threading.Lock()
    failures: list[str] = []

    def client_loop() -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            while True:
                with lock:
                    if next(counter, None) is None:
                        return
                try:
                    _, result = post_run(client, 2, use_cache=False)
                    if result["status"] != "ok":
                        failures.append(result["status"])
                except httpx.HTTPError as error:
                    failures.append(repr(error))

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return total / elapsed, len(failures), elapsed


def cold_torchrun(nproc: int, runs: int) -> dict[str, Any]:
    """Time a cold `torchrun --standalone` of the same snippet (the baseline)."""
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if torchrun is None:
        return {"times": [], "memory": []}
    with tempfile.TemporaryDirectory() as directory:
        snippet = Path(directory, "snippet.py")
        snippet.write_text(SNIPPET)
        times, memory = [], []
        for _ in range(runs):
            command = [torchrun, "--standalone", f"--nproc_per_node={nproc}", str(snippet)]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            times.append((time.perf_counter() - started) * 1000)
            memory.extend(parse_memory(done.stdout))
    return {"times": times, "memory": memory}


def rank_memory(ranks: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [pair for rank in ranks for pair in parse_memory(rank["stdout"])]


def parse_memory(text: str) -> list[tuple[int, int]]:
    # torchrun's ranks share one stdout, so their lines can interleave: match, don't split.
    return [(int(rss), int(private)) for rss, private in MEMORY.findall(text)]


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) >= 2 else float("nan")


def memory_text(pairs: list[tuple[int, int]]) -> str:
    if not pairs:
        return "n/a"
    rss = statistics.median(p[0] for p in pairs) / 1024
    private = statistics.median(p[1] for p in pairs) / 1024
    return f"private {private:.0f} MB, rss {rss:.0f} MB"


def report(
    health: dict[str, Any],
    warm2: dict[str, Any],
    warm4: dict[str, Any],
    cached: list[float],
    rate_failures: tuple[float, int, float],
    cold2: dict[str, Any],
    cold4: dict[str, Any],
    args: argparse.Namespace,
) -> None:
    """Print the figures, the ratios against cold torchrun, and the targets."""
    rate, failures, elapsed = rate_failures
    print()
    print(f"RankLab executor benchmark: {os.cpu_count()} cores, torch {health.get('torch')},")
    print(f"sandbox: {health.get('sandbox')}; {args.runs} timed runs per latency row")
    print()
    header = f"{'measure':<34}{'warm executor (HTTP)':>24}{'cold torchrun':>28}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    rows = [("2-rank DDP fwd/bwd", warm2, cold2), ("4-rank DDP fwd/bwd", warm4, cold4)]
    for label, warm, cold in rows:
        warm_p50, cold_p50 = p50(warm["times"]), p50(cold["times"])
        ratio = f"{cold_p50 / warm_p50:.0f}x" if cold["times"] else "n/a"
        print(f"{label + ' p50':<34}{warm_p50:>21.0f} ms{cold_p50:>25.0f} ms{ratio:>8}")
        print(f"{label + ' p90':<34}{p90(warm['times']):>21.0f} ms")
        print(f"{label[:6] + ' memory per rank':<34}{memory_text(warm['memory']):>24}"
              f"  {memory_text(cold['memory']):>26}")  # fmt: skip
    print(f"{'cached repeat p50':<34}{p50(cached):>21.1f} ms")
    print(
        f"{'throughput, ' + str(args.clients) + ' clients':<34}{rate:>17.1f} runs/s"
        f"   ({args.throughput_runs} runs in {elapsed:.1f} s, {failures} failures)"
    )
    print()
    checks = [
        ("2-rank DDP p50 <= 150 ms", p50(warm2["times"]) <= TARGETS["ddp2_p50_ms"]),
        ("4-rank DDP p50 <= 250 ms", p50(warm4["times"]) <= TARGETS["ddp4_p50_ms"]),
        ("cached repeat p50 <= 10 ms", p50(cached) <= TARGETS["cached_p50_ms"]),
        (">= 10 runs/s, 0 failures", rate >= TARGETS["runs_per_s"] and failures == 0),
    ]
    for name, ok in checks:
        print(f"  [{'PASS' if ok else 'MISS'}] {name}")


if __name__ == "__main__":
    sys.exit(main())

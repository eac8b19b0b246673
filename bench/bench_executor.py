"""Benchmark the executor against a cold torchrun of the same snippet, in one run.

Starts `executor serve` as its own process (sandboxed, as in production), measures through HTTP:
2- and 4-rank DDP forward/backward latency with where each run's time went, a cached repeat,
throughput from 4 concurrent clients; then times a cold `torchrun --standalone` of the same
snippet, and prints both side by side with their ratios and per-rank memory.

With `--against DIR` it also starts DIR's executor (another checkout: a worktree of an older
commit, say) and alternates every measurement between the two (ABBA), so that both see the same
load; it prints both and the ratio this/base. Timings on a shared machine are noisy: compare
medians from one such run, never figures from two runs.

    .venv/bin/python bench/bench_executor.py [--runs 30] [--throughput-runs 500] [--trusted]
    .venv/bin/python bench/bench_executor.py --against /path/to/base/checkout [--runs 30]

The breakdown of a run comes from wall-clock marks the snippet prints (CLOCK_REALTIME, the same
inside the sandbox) and the client's own: fork (request sent until the last rank runs the
snippet), rendezvous (init_process_group), snippet (the DDP step), teardown
(destroy_process_group), result (the last rank's end until the response is read).

Each timed run starts once both executors are idle (`--settle-ms`, 300 by default: after a run a
slot stages the next one, some forks of a warm parent, and with two executors on the same cores
one's staging would otherwise land in the other's timed run): the latency a learner sees when
pressing Run. The 2-rank rows are measured back to back as well (no pause: the staging of the
run before competes for the cores), and the throughput figure is back to back throughout.
"""

from __future__ import annotations

import argparse
import functools
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
SNIPPET = """\
import time
started = time.time()
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
joined = time.time()
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(8, 16) + rank).pow(2).mean()
loss.backward()
optimizer.step()
stepped = time.time()
memory = {}
for line in open("/proc/self/smaps_rollup"):
    key, _, value = line.partition(":")
    if key in ("Rss", "Private_Clean", "Private_Dirty"):
        memory[key] = int(value.split()[0])
private = memory["Private_Clean"] + memory["Private_Dirty"]
dist.destroy_process_group()
print(f"rank {rank} loss {loss.item():.4f} rss_kb {memory['Rss']} private_kb {private} "
      f"marks {started:.6f} {joined:.6f} {stepped:.6f} {time.time():.6f}")
"""
MEMORY = re.compile(r"rss_kb (\d+) private_kb (\d+)")
MARKS = re.compile(r"marks ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)")
PHASES = ("fork", "rendezvous", "snippet", "teardown", "result")
TARGETS = {"ddp2_p50_ms": 45, "ddp4_p50_ms": 250, "cached_p50_ms": 10, "runs_per_s": 10}


@dataclass
class Service:
    """One checkout's `executor serve`, and what was measured through it."""

    label: str
    tree: Path
    process: subprocess.Popen[bytes] | None = None
    base: str = ""
    health: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    memory: list[tuple[int, int]] = field(default_factory=list)
    cached: list[float] = field(default_factory=list)
    throughput: list[tuple[int, int, float]] = field(default_factory=list)
    warmed: set[int] = field(default_factory=set)  # rank counts run once untimed

    def start(self, trusted: bool) -> None:
        """Start the checkout's executor on a free port; wait until /healthz says it is warm."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        own_python = self.tree / ".venv" / "bin" / "python"
        python = str(own_python) if own_python.exists() else sys.executable
        # `-m` from the checkout's root imports that checkout's executor package.
        command = [python, "-m", "executor.cli", "executor", "serve", "--port", str(port)]
        command += ["--log-level", "warning"] + (["--trusted"] if trusted else [])
        env = {**os.environ, "RANKLAB_EXECUTOR_QUEUE_LIMIT": "64"}
        self.process = subprocess.Popen(command, cwd=self.tree, env=env)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                response = httpx.get(f"{self.base}/healthz", timeout=1)
                if response.status_code == 200:
                    self.health = response.json()
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise SystemExit(f"the executor of {self.tree} did not become healthy in 240 s")

    def stop(self) -> None:
        """Stop the service (its zygote follows)."""
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)


def main() -> int:
    """Run every measurement and print the comparison table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30, help="timed runs per latency figure")
    parser.add_argument("--throughput-runs", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--torchrun-runs", type=int, default=3)
    parser.add_argument("--trusted", action="store_true", help="benchmark without the sandbox")
    parser.add_argument(
        "--settle-ms",
        type=int,
        default=300,
        help="pause before each timed run, so that it starts on idle executors",
    )
    parser.add_argument("--against", type=Path, help="another checkout to compare with (base)")
    args = parser.parse_args()

    services = [Service("this", REPO)]
    if args.against is not None:
        services.insert(0, Service("base", args.against.resolve()))
    load_before = os.getloadavg()
    try:
        for service in services:
            service.start(args.trusted)
        for nproc in (2, 4):
            run = functools.partial(timed_run, nproc=nproc, settle_s=args.settle_ms / 1000)
            alternate(services, args.runs, run)
        alternate(services, args.runs, functools.partial(timed_run, nproc=2, settle_s=0.0))
        alternate(services, args.runs * 2, cached_run)
        chunk = max(1, args.throughput_runs // 2)
        alternate(services, 2, lambda s: s.throughput.append(throughput(s, args.clients, chunk)))
    finally:
        for service in services:
            service.stop()
    load_after = os.getloadavg()
    cold2 = cold_torchrun(2, args.torchrun_runs)
    cold4 = cold_torchrun(4, args.torchrun_runs)
    report(services, cold2, cold4, args, (load_before, load_after))
    return 0


def alternate(services: list[Service], rounds: int, measure: Callable[[Service], None]) -> None:
    """Measure every service `rounds` times, in ABBA order so that neither always goes first."""
    for index in range(rounds):
        for service in services if index % 2 == 0 else services[::-1]:
            measure(service)


def post_run(base: str, client: httpx.Client, nproc: int, use_cache: bool) -> dict[str, Any]:
    body = {"code": SNIPPET, "nproc": nproc, "timeout_s": 30, "use_cache": use_cache}
    response = client.post(f"{base}/v1/runs", json=body)
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def row_of(nproc: int, settle_s: float) -> str:
    """The table's row for runs of `nproc` ranks, started on idle executors or back to back."""
    return f"{nproc}-rank DDP" if settle_s > 0 else f"{nproc}-rank, back to back"


def timed_run(service: Service, nproc: int, settle_s: float) -> None:
    """One uncached run through HTTP, with its breakdown (the first is untimed: page faults)."""
    with httpx.Client(timeout=60) as client:
        if nproc not in service.warmed:
            post_run(service.base, client, nproc, use_cache=False)
            service.warmed.add(nproc)
        time.sleep(settle_s)
        sent = time.time()
        result = post_run(service.base, client, nproc, use_cache=False)
        received = time.time()
    if result["status"] != "ok":
        raise SystemExit(f"benchmark snippet failed: {json.dumps(result)[:2000]}")
    marks = [MARKS.search(rank["stdout"]) for rank in result["ranks"]]
    if not all(marks):
        raise SystemExit(f"the snippet printed no marks: {json.dumps(result)[:2000]}")
    last = [max(float(m.group(i)) for m in marks if m) for i in range(1, 5)]
    bounds = [sent, *last, received]
    breakdown = {phase: (bounds[i + 1] - bounds[i]) * 1000 for i, phase in enumerate(PHASES)}
    breakdown["total"] = (received - sent) * 1000
    service.latency.setdefault(row_of(nproc, settle_s), []).append(breakdown)
    if nproc == 2 and settle_s > 0:
        service.memory.extend(rank_memory(result["ranks"]))


def cached_run(service: Service) -> None:
    """Time a repeat that the cache answers."""
    with httpx.Client(timeout=60) as client:
        post_run(service.base, client, 2, use_cache=True)
        started = time.perf_counter()
        post_run(service.base, client, 2, use_cache=True)
        service.cached.append((time.perf_counter() - started) * 1000)


def throughput(service: Service, clients: int, total: int) -> tuple[int, int, float]:
    """Run `total` uncached 2-rank runs from `clients` concurrent clients; count failures."""
    counter = iter(range(total))
    lock = threading.Lock()
    failures: list[str] = []

    def client_loop() -> None:
        with httpx.Client(timeout=60) as client:
            while True:
                with lock:
                    if next(counter, None) is None:
                        return
                try:
                    result = post_run(service.base, client, 2, use_cache=False)
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
    return total, len(failures), time.perf_counter() - started


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


def rate_of(service: Service) -> tuple[float, int, float]:
    runs = sum(part[0] for part in service.throughput)
    failures = sum(part[1] for part in service.throughput)
    elapsed = sum(part[2] for part in service.throughput)
    return (runs / elapsed if elapsed else float("nan")), failures, elapsed


def report(
    services: list[Service],
    cold2: dict[str, Any],
    cold4: dict[str, Any],
    args: argparse.Namespace,
    load: tuple[tuple[float, float, float], tuple[float, float, float]],
) -> None:
    """Print the figures, the breakdown, the ratios against cold torchrun (and base), targets."""
    this = services[-1]
    print()
    print(f"RankLab executor benchmark: {os.cpu_count()} cores, torch {this.health.get('torch')},")
    print(
        f"sandbox: {this.health.get('sandbox')}; {args.runs} timed runs per latency row, "
        f"each after {args.settle_ms} ms idle (but the back-to-back row)"
    )
    print(f"load average before {load[0][0]:.2f}, after {load[1][0]:.2f} (1 min)")
    for service in services:
        print(f"  {service.label}: {service.tree}")
    print()
    header = f"{'p50 ms (p90)':<34}" + "".join(f"{phase:>11}" for phase in PHASES)
    print(header + f"{'total':>16}")
    print("-" * (len(header) + 16))
    for row in (row_of(2, 1), row_of(4, 1), row_of(2, 0)):
        for service in services:
            rows = service.latency.get(row, [])
            cells = "".join(f"{p50([r[phase] for r in rows]):>11.1f}" for phase in PHASES)
            totals = [r["total"] for r in rows]
            print(f"{f'{row}, {service.label}':<34}{cells}"
                  f"{p50(totals):>9.1f} ({p90(totals):.0f})")  # fmt: skip
        if len(services) == 2:
            base, ours = (service.latency.get(row, []) for service in services)
            ratios = "".join(
                f"{ratio(p50([r[p] for r in ours]), p50([r[p] for r in base])):>11}" for p in PHASES
            )
            total = ratio(p50([r["total"] for r in ours]), p50([r["total"] for r in base]))
            print(f"{'  this / base':<34}{ratios}{total:>9}")
    print()
    for service in services:
        rate, failures, elapsed = rate_of(service)
        runs = sum(part[0] for part in service.throughput)
        print(f"{service.label}: cached repeat p50 {p50(service.cached):.1f} ms; "
              f"{rate:.1f} runs/s from {args.clients} clients ({runs} runs in {elapsed:.1f} s, "
              f"{failures} failures); memory per rank {memory_text(service.memory)}")  # fmt: skip
    print()
    warm2 = p50([r["total"] for r in this.latency.get(row_of(2, 1), [])])
    warm4 = p50([r["total"] for r in this.latency.get(row_of(4, 1), [])])
    for label, warm, cold in (("2-rank", warm2, cold2), ("4-rank", warm4, cold4)):
        cold_p50 = p50(cold["times"])
        times = f"{cold_p50 / warm:.0f}x" if cold["times"] else "n/a"
        print(f"cold torchrun {label} p50 {cold_p50:.0f} ms ({memory_text(cold['memory'])}): "
              f"the warm executor is {times} faster")  # fmt: skip
    print()
    rate, failures, _ = rate_of(this)
    checks = [
        (f"2-rank DDP p50 <= {TARGETS['ddp2_p50_ms']} ms", warm2 <= TARGETS["ddp2_p50_ms"]),
        (f"4-rank DDP p50 <= {TARGETS['ddp4_p50_ms']} ms", warm4 <= TARGETS["ddp4_p50_ms"]),
        ("cached repeat p50 <= 10 ms", p50(this.cached) <= TARGETS["cached_p50_ms"]),
        (">= 10 runs/s, 0 failures", rate >= TARGETS["runs_per_s"] and failures == 0),
    ]
    for name, ok in checks:
        print(f"  [{'PASS' if ok else 'MISS'}] {name}")


def ratio(ours: float, base: float) -> str:
    return f"{ours / base:.2f}" if base else "n/a"


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark the job bus: runs/s and latency with 1, 2 and 3 agents, beside the embedded HTTP
executor, in one run on this machine.

Starts a private redis-server and real `ranklab agent` processes (sandboxed, as in production,
unless --trusted), adding one agent at a time; each figure is `--runs` small 2-rank gloo runs
(an all_reduce; distinct code, so never a cached result) submitted through RedisExecutorClient
from `--clients` threads, then `--alone-runs` from one client. Then the same through
HttpExecutorClient against one embedded executor with as many slots as the machine has cores
(its default).

    .venv/bin/python bench/bench_bus.py [--runs 200] [--clients 8] [--slots 1] [--trusted]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.bus_client import RedisExecutorClient  # noqa: E402
from app.embedded import temporary_executor  # noqa: E402
from app.executor_client import HttpExecutorClient  # noqa: E402
from executor import bus  # noqa: E402
from executor.contract import RunRequest, RunResult, RunStatus  # noqa: E402
from executor.ports import free_port  # noqa: E402

SNIPPET = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
print("run {number} rank", dist.get_rank(), "sum", total.item())
dist.destroy_process_group()
"""
numbers = itertools.count()


def main() -> int:
    """Measure each configuration and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200, help="runs per figure")
    parser.add_argument("--clients", type=int, default=8, help="threads submitting at once")
    parser.add_argument(
        "--alone-runs", type=int, default=30, help="runs from a single client (its p50)"
    )
    parser.add_argument("--slots", type=int, default=1, help="slots per agent")
    parser.add_argument("--agents", type=int, default=3, help="measure 1 … this many agents")
    parser.add_argument("--trusted", action="store_true", help="benchmark without the sandbox")
    args = parser.parse_args()

    rows: list[tuple[str, int, dict[str, Any]]] = []
    with private_redis() as url:
        agents: list[subprocess.Popen[bytes]] = []
        try:
            for count in range(1, args.agents + 1):
                agents.append(spawn_agent(url, f"bench-{count}", args.slots, args.trusted))
                wait_warm(url, count)
                client = RedisExecutorClient(url, queue_limit=10_000)
                warm_up(client.run, args.clients)
                figures = measure_both(client.run, args)
                rows.append((f"bus, {count} agent(s)", count * args.slots, figures))
        finally:
            for agent in agents:
                stop(agent)
    slots = os.cpu_count() or 1
    with temporary_executor(trusted=args.trusted, slots=slots) as executor_url:
        http = HttpExecutorClient(executor_url)
        warm_up(http.run, args.clients)
        figures = measure_both(http.run, args)
        rows.append(("embedded HTTP executor", slots, figures))
    report(rows, args)
    return 0


@contextlib.contextmanager
def private_redis() -> Iterator[str]:
    """A redis-server with no persistence on a free port, stopped afterwards."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    folder = tempfile.mkdtemp(prefix="ranklab-bench-redis-")
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", folder,
               "--save", "", "--appendonly", "no"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        until(lambda: _pings(client), 20, "redis-server")
        yield url
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def spawn_agent(url: str, name: str, slots: int, trusted: bool) -> subprocess.Popen[bytes]:
    """Start `ranklab agent` in its own process group."""
    command = [sys.executable, "-m", "app.cli", "agent", "--queue", url, "--slots", str(slots),
               "--name", name]  # fmt: skip
    if trusted:
        command.append("--trusted")
    return subprocess.Popen(command, cwd=REPO, start_new_session=True, stderr=subprocess.DEVNULL)


def stop(agent: subprocess.Popen[bytes]) -> None:
    """SIGTERM (graceful), then clear whatever is left of its group."""
    agent.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        agent.wait(30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(agent.pid, signal.SIGKILL)
    agent.wait()


def wait_warm(url: str, count: int) -> None:
    """Block until `count` agents beat as ready."""
    client = redis.Redis.from_url(url, decode_responses=True)

    def ready() -> bool:
        beats = bus.live_agents(client.hgetall(bus.agents_key("cpu")), time.time())  # type: ignore[arg-type]
        return sum(1 for beat in beats.values() if beat.get("ready")) >= count

    until(ready, 180, f"{count} warm agent(s)")


def until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll `check` until it holds."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_bus: timed out waiting for {what}")
        time.sleep(0.1)


def request() -> RunRequest:
    """A small 2-rank gloo run whose code is new each time (never served from the cache)."""
    return RunRequest(code=SNIPPET.format(number=next(numbers)), nproc=2, backend="gloo")


def warm_up(run: Callable[[RunRequest], RunResult], clients: int) -> None:
    """A few runs first, so that the figures do not include first-run costs."""
    measure(run, clients * 2, clients)


def measure(run: Callable[[RunRequest], RunResult], total: int, clients: int) -> dict[str, Any]:
    """Run `total` runs from `clients` threads; return runs/s, p50/p95 latency, failures."""
    latencies: list[float] = []
    failures: Counter[str] = Counter()
    lock = threading.Lock()
    left = iter(range(total))

    def client_loop() -> None:
        for _ in iter(lambda: next(left, None), None):
            started = time.perf_counter()
            try:
                result = run(request())
                failure = None if result.status is RunStatus.OK else describe(result)
            except Exception as error:
                failure = f"{type(error).__name__}: {error}"
            with lock:
                latencies.append(time.perf_counter() - started)
                if failure is not None:
                    failures[failure] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "runs_per_s": total / elapsed,
        "p50_ms": statistics.median(ordered) * 1000,
        "p95_ms": ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000,
        "failures": sum(failures.values()),
        "elapsed_s": elapsed,
        "why": failures,
    }


def measure_both(
    run: Callable[[RunRequest], RunResult], args: argparse.Namespace
) -> dict[str, Any]:
    """The figures under load, plus the p50 of one client alone (its failures counted too)."""
    figures = measure(run, args.runs, args.clients)
    alone = measure(run, args.alone_runs, 1)
    figures["alone_ms"] = alone["p50_ms"]
    figures["failures"] += alone["failures"]
    figures["why"].update(alone["why"])
    return figures


def describe(result: RunResult) -> str:
    """What went wrong in a failed run, in one line."""
    ranks = "; ".join(
        f"rank {rank.rank} {rank.status.value}"
        + (f" {rank.exception.type}: …{rank.exception.message[-120:]}" if rank.exception else "")
        for rank in result.ranks
        if rank.status.value != "ok"
    )
    return f"{result.status.value}: {result.message or ranks}"


def report(rows: list[tuple[str, int, dict[str, Any]]], args: argparse.Namespace) -> None:
    """Print one line per configuration, with the ratio against the HTTP executor."""
    sandbox = "trusted" if args.trusted else "sandbox on"
    print(f"\nRankLab job bus, {os.cpu_count()} cores, {sandbox}: {args.runs} 2-rank gloo runs "
          f"per line from {args.clients} clients\n")  # fmt: skip
    baseline = rows[-1][2]["runs_per_s"]
    print(f"{'configuration':<26}{'slots':>6}{'runs/s':>9}{'× HTTP':>8}{'p50 ms':>9}"
          f"{'p95 ms':>9}{'failed':>8}{'alone p50':>11}")  # fmt: skip
    for name, slots, figures in rows:
        print(
            f"{name:<26}{slots:>6}{figures['runs_per_s']:>9.1f}"
            f"{figures['runs_per_s'] / baseline:>8.2f}{figures['p50_ms']:>9.0f}"
            f"{figures['p95_ms']:>9.0f}{figures['failures']:>8}{figures['alone_ms']:>11.0f}"
        )
    print("\np50/p95: latency under the load above (queueing included); alone p50: one client, "
          "one run at a time (what a single learner waits)")  # fmt: skip
    for name, _slots, figures in rows:
        for why, count in figures["why"].most_common():
            print(f"  {name}: {count} × {why}")


if __name__ == "__main__":
    raise SystemExit(main())

"""Load a lab: N learners run lab steps at once against a real `ranklab serve` (app and
embedded executor, real sandboxed gloo ranks). Prints errors and the time from pressing Run to
the first output line, p50 and p95 (numbers, not assertions).

    .venv/bin/python bench/bench_labs.py [--learners 20] [--runs 3]

Each learner starts as a guest, opens the step, and runs the step's solution `--runs` times one
after the other, following each run's SSE stream to its end (as the page does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from executor.ports import free_port  # noqa: E402

LAB = REPO / "tests" / "fixtures" / "labs" / "hello"
STEP = "/labs/hello-ranks/steps/print-rank"
CODE = (
    "import os\n"
    'rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])\n'
    'print(f"hello from rank {rank} of {world}")\n'
)
CSRF = re.compile(r'<meta name="csrf-token" content="([0-9a-f]+)">')


async def learner(base: str, runs: int) -> tuple[list[float], list[float], list[str]]:
    """One learner's runs: (seconds to first output, seconds to the end, problems)."""
    firsts: list[float] = []
    totals: list[float] = []
    problems: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        page = await client.get("/")
        token = CSRF.search(page.text)[1]  # type: ignore[index]
        await client.post("/guest", data={"csrf_token": token, "next": STEP})
        page = await client.get(STEP)
        token = CSRF.search(page.text)[1]  # type: ignore[index]
        for _ in range(runs):
            pressed = time.monotonic()
            started = await client.post(
                f"{STEP}/runs",
                data={"csrf_token": token, "code": CODE, "nproc": "2"},
                headers={"Accept": "application/json"},
            )
            if started.status_code != 201:
                problems.append(f"start {started.status_code}: {started.text[:200]}")
                continue
            first = None
            passed = None
            async with client.stream("GET", started.json()["events"]) as stream:
                event = ""
                async for line in stream.aiter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        if event == "output" and first is None:
                            first = time.monotonic() - pressed
                        elif event == "checks":
                            passed = json.loads(line[6:])["passed"]
                        elif event in ("unavailable", "stopped"):
                            problems.append(f"{event}: {line[6:200]}")
            totals.append(time.monotonic() - pressed)
            if first is not None:
                firsts.append(first)
            if passed is not True:
                problems.append(f"checks did not pass ({passed})")
    return firsts, totals, problems


async def warm_up(base: str) -> None:
    """Wait until a run goes through (the executor answers once its pool is warm)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        _, totals, problems = await learner(base, 1)
        if totals and not problems:
            return
        await asyncio.sleep(2)
    raise SystemExit("the executor never became ready")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def load(base: str, learners: int, runs: int) -> int:
    results = await asyncio.gather(*(learner(base, runs) for _ in range(learners)))
    firsts = [value for found, _, _ in results for value in found]
    totals = [value for _, found, _ in results for value in found]
    problems = [problem for _, _, found in results for problem in found]
    print(f"{learners} learners × {runs} runs of a 2-rank step ({os.cpu_count()} CPUs)")
    print(f"runs finished: {len(totals)}, errors: {len(problems)}")
    for problem in problems[:10]:
        print(f"  {problem}")
    if firsts:
        print(
            f"time to first output: p50 {statistics.median(firsts):.2f} s, "
            f"p95 {percentile(firsts, 0.95):.2f} s, max {max(firsts):.2f} s"
        )
        print(
            f"time to the end of the run: p50 {statistics.median(totals):.2f} s, "
            f"p95 {percentile(totals, 0.95):.2f} s"
        )
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ranklab-bench-labs-") as folder:
        root = Path(folder)
        shutil.copytree(LAB, root / "challenges" / "hello")
        port = free_port()
        environment = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{root / 'bench.db'}",
            "RANKLAB_CHALLENGES_DIR": str(root / "challenges"),
            "RANKLAB_LAB_RUNS_PER_LEARNER": "1000/minute",
            "RANKLAB_SECRET_KEY": "bench-" + "x" * 40,
        }
        python = sys.executable
        subprocess.run([python, "-m", "app.cli", "db", "upgrade"], env=environment, check=True,
                       cwd=REPO, stdout=subprocess.DEVNULL)  # fmt: skip
        log = (root / "serve.log").open("wb")
        server = subprocess.Popen(
            [python, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=environment,
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{base}/").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
            asyncio.run(warm_up(base))  # the embedded executor warms its pool first
            return asyncio.run(load(base, args.learners, args.runs))
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    sys.exit(main())

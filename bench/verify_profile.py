"""Where verify's time goes: every run of `ranklab verify --all`, timed, with the CPU it cost.

`make bench-verify` (`--jobs 3` by default, as `make proofs`; `--jobs 1 2 3` measures each in
turn; `--hangs`: only the items and proofs whose claim says the run hangs, the "timeout"
runs). Verifies the whole course from scratch through a private executor with a slot per job,
as `make proofs` does, and prints for each --jobs: the wall time, the CPU seconds of
everything it started (the verify process, the executor and every rank: a cpuacct cgroup of
its own where the host has cgroup v1's cpuacct, else this process's children), the runs by
kind, the costliest items and topics, and how long runs waited outside the snippet (the
executor's run time against the client's). Numbers, not checks: the machine may be shared.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import os
import resource
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import embedded
from app.challenges import loader
from app.config import Settings
from app.executor_client import HttpExecutorClient, RunEvent
from app.verification import packing, pipeline
from app.verification.incremental import Selection
from app.verification.rules import claims_hang
from executor.contract import RunRequest, RunResult

ROOT = Path(__file__).resolve().parents[1]
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@dataclass(frozen=True)
class Run:
    code: str
    nproc: int
    wall_ms: int
    executor_ms: int
    status: str
    ended_s: float = 0.0  # since the client was made


class Recording:
    """The HTTP client, noting each run's wall time as the caller sees it."""

    def __init__(self, inner: HttpExecutorClient) -> None:
        self.inner = inner
        self.runs: list[Run] = []
        self.lock = threading.Lock()
        self.made = time.monotonic()

    def health(self) -> dict[str, Any] | None:
        return self.inner.health()

    def run(self, request: RunRequest) -> RunResult:
        return self.inner.run(request)

    def stream(self, request: RunRequest) -> Iterator[RunEvent]:
        started = time.monotonic()
        result: RunResult | None = None
        for event in self.inner.stream(request):
            if isinstance(event, RunResult):
                result = event
            yield event
        ended = time.monotonic()
        wall = round((ended - started) * 1000)
        with self.lock:
            self.runs.append(
                Run(
                    request.code,
                    request.nproc,
                    wall,
                    result.duration_ms if result else 0,
                    result.status.value if result else "none",
                    ended - self.made,
                )
            )

    def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        return self.inner.astream(request)


@contextlib.contextmanager
def cpu_group(name: str) -> Iterator[Path | None]:
    """A cpuacct cgroup holding this process (and so all it starts) while in the block, if the
    host has one; on leaving, this process goes back to the root group."""
    group: Path | None = None
    if (CPUACCT / "cgroup.procs").exists():
        try:
            (CPUACCT / name).mkdir(exist_ok=True)
            (CPUACCT / name / "cgroup.procs").write_text(str(os.getpid()))
            group = CPUACCT / name
        except OSError:
            group = None
    try:
        yield group
    finally:
        if group is not None:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))


def _cpu_s(group: Path | None) -> float:
    if group is not None:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(path: Path, jobs: int, group: Path | None, top: int, hangs: bool = False) -> None:
    report = loader.load_path(path)
    selection = pipeline.choose(
        report.sets, report.labs, report.topics, (), None, True, lambda: None,  # type: ignore[arg-type,return-value]
        print,
    )  # fmt: skip
    if hangs:
        _only_hang_claims(selection)
    owner: dict[str, str] = {}
    for loaded in selection.sets:
        for item in loaded.challenge_set.items:
            key = f"{loaded.challenge_set.id}/{item.id}"
            for code in (loaded.code.get(item.id), loaded.fixed_code.get(item.id)):
                if code:
                    owner[_digest(code)] = key
    for proof_run in selection.proof_runs:
        owner.setdefault(_digest(proof_run.code), proof_run.key)
    cpu_before, own_before = _cpu_s(group), _own_cpu_s()
    started = time.monotonic()
    slots = jobs + packing.SPARE_SLOTS if jobs > 1 else None  # as `ranklab verify` starts it
    with embedded.temporary_executor(slots=slots, warm_compile=True) as url:  # as verify
        warm = time.monotonic()
        client = Recording(HttpExecutorClient(url, token=Settings().executor_token))
        outcomes = list(pipeline.run(client, selection, pipeline.REPEATS, jobs))
        done = time.monotonic()
    cpu, own = _cpu_s(group) - cpu_before, _own_cpu_s() - own_before
    verdicts: dict[str, int] = defaultdict(int)
    for outcome in outcomes:
        verdicts[outcome.report.verdict.value] += 1
    runs = client.runs
    print(
        f"--jobs {jobs}: {done - started:.1f} s wall ({warm - started:.1f} s executor start), "
        f"{cpu:.1f} s CPU ({own:.1f} s of it the verify process), {len(runs)} runs, "
        f"load {os.getloadavg()[0]:.1f}; {dict(verdicts)}"
    )
    for outcome in outcomes:
        if outcome.report.verdict.value == "fail":
            print("\n".join(outcome.lines()[:6]))
    by_kind: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        kind = "timeout" if run.status == "timeout" else f"{run.nproc} ranks"
        if "torch.compile" in run.code:
            kind += ", torch.compile"
        by_kind[kind].append(run)
    for kind, group_runs in sorted(by_kind.items(), key=lambda pair: -_sum(pair[1])):
        walls = sorted(run.wall_ms for run in group_runs)
        outside = sum(run.wall_ms - run.executor_ms for run in group_runs)
        print(
            f"  {kind:28} {len(group_runs):4} runs, {_sum(group_runs) / 1000:6.1f} s "
            f"(median {walls[len(walls) // 2]} ms, outside the run {outside / 1000:.1f} s)"
        )
    per_item: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for outcome in outcomes:
        per_item[outcome.key] = outcome.duration_ms
    for run in runs:
        count[owner.get(_digest(run.code), "?")] += 1
    total = sum(per_item.values()) or 1
    print(f"  item wall, summed: {total / 1000:.1f} s; costliest:")
    for key, ms in sorted(per_item.items(), key=lambda pair: -pair[1])[:top]:
        print(f"    {ms / 1000:6.1f} s {100 * ms / total:4.1f}% {count.get(key, 0):2} runs  {key}")
    per_set: dict[str, int] = defaultdict(int)
    for key, ms in per_item.items():
        per_set[key.split("/", 1)[0]] += ms
    _tail(runs, owner, jobs)
    _long_reruns(outcomes)
    print("  by set or proof owner:")
    for key, ms in sorted(per_set.items(), key=lambda pair: -pair[1])[:8]:
        print(f"    {ms / 1000:6.1f} s {100 * ms / total:4.1f}%  {key}")


def _tail(runs: list[Run], owner: dict[str, str], jobs: int) -> None:
    """When fewer than `jobs` runs were left in flight for good, and the last runs to end: a
    long tail there is wall time the packing left on the table."""
    if not runs:
        return
    spans = sorted((run.ended_s - run.wall_ms / 1000, run.ended_s) for run in runs)
    end = max(stop for _, stop in spans)
    # Walk back from the end: the last moment `jobs` runs were in flight at once.
    edges = sorted([(start, 1) for start, _ in spans] + [(stop, -1) for _, stop in spans])
    in_flight, full_until = 0, 0.0
    for moment, step in edges:
        was_full = in_flight >= jobs
        in_flight += step
        if was_full and in_flight < jobs:
            full_until = moment
    print(f"  runs ended at {end:.1f} s; {jobs}+ in flight until {full_until:.1f} s; last to end:")
    for run in sorted(runs, key=lambda run: -run.ended_s)[:5]:
        name = owner.get(_digest(run.code), "?")
        print(f"    {run.ended_s:6.1f} s  {run.wall_ms / 1000:5.1f} s {run.status:8} {name}")


def _long_reruns(outcomes: list[pipeline.Outcome]) -> None:
    """The time-outs the stacks did not prove hung, so that a re-run at a much longer limit
    (30 s or more) told a hang from slowness: where each rank was, and its CPU over the sample."""
    for outcome in outcomes:
        observations = outcome.report.observations
        if not any(observation.long_limit for observation in observations):
            continue
        print(f"  long re-run: {outcome.key}")
        for observation in observations:
            if observation.result.status.value == "timeout" and not observation.long_limit:
                for rank in observation.result.ranks:
                    print(f"      rank {rank.rank} {rank.status.value}: {rank.stuck}")


def _only_hang_claims(selection: Selection) -> None:
    """Keep the items and proofs whose claim says the snippet hangs (no labs)."""
    kept = []
    for loaded in selection.sets:
        items = [item for item in loaded.challenge_set.items if claims_hang(item)]
        if items:
            subset = loaded.challenge_set.model_copy(update={"items": items})
            kept.append(dataclasses.replace(loaded, challenge_set=subset))
    selection.sets, selection.labs = kept, []
    selection.proof_runs = [run for run in selection.proof_runs if claims_hang(run.proof)]


def _own_cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _sum(runs: list[Run]) -> int:
    return sum(run.wall_ms for run in runs)


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, nargs="+", default=[3])  # as `make proofs`
    parser.add_argument("--path", type=Path, default=ROOT / "challenges")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--hangs", action="store_true", help="only the claims that it hangs")
    args = parser.parse_args()
    with cpu_group(f"ranklab-verify-bench-{os.getpid()}") as group:
        for jobs in args.jobs:
            measure(args.path, jobs, group, args.top, args.hangs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run every executable item on an executor and judge its key (`ranklab verify`, the staff view)."""

from __future__ import annotations

import dataclasses
from typing import Any

from app import metrics
from app.challenges.loader import LoadedSet
from app.challenges.schema import EXECUTABLE_KINDS, InlineProof, ItemBase
from app.executor_client import ExecutorClient, ExecutorUnavailable
from app.runs.service import gpus_needed, run_request
from app.verification.rules import ItemReport, Observation, Verdict, judge, judge_proof
from executor.contract import OutputEvent, RankResult, RankStatus, RunResult, RunStatus

# A time-out is re-run with a much longer limit before it counts as a hang: a slow rank that
# finishes is not a deadlock.
LONG_LIMIT_FACTOR = 4
LONG_LIMIT_MIN_S = 30.0
DEFAULT_MAX_TIMEOUT_S = 60.0
# A rank that drew unseeded random numbers gets this many more runs before fixed output is
# believed: three runs can agree by chance (a coin flip printed as 0 or 1).
EXTRA_RUNS_FOR_RANDOMNESS = 5


def observe(
    client: ExecutorClient, code: str, item: Any, timeout_s: float | None = None
) -> Observation:
    """Run a snippet once, uncached, noting which rank printed first, second, …"""
    request = run_request(item, code, timeout_s=timeout_s, use_cache=False)
    order: list[int] = []
    result: RunResult | None = None
    for event in client.stream(request):
        if isinstance(event, OutputEvent):
            if event.stream == "stdout" and event.rank not in order:
                order.append(event.rank)
        else:
            result = event
    if result is None:
        raise ExecutorUnavailable("the executor's stream ended without a result")
    metrics.count_run("verify", result.status.value)
    return Observation(result, tuple(order))


def long_limit(timeout_s: float, max_timeout_s: float) -> float:
    """The limit of the re-run that tells a hang from a slow rank."""
    return min(max(LONG_LIMIT_FACTOR * timeout_s, LONG_LIMIT_MIN_S), max_timeout_s)


def _output_varied(observations: list[Observation]) -> bool:
    outputs = {tuple(rank.stdout for rank in o.result.ranks) for o in observations}
    return len(outputs) > 1


def _drew_unseeded(observations: list[Observation]) -> bool:
    return any(rank.unseeded_random for o in observations for rank in o.result.ranks)


def verify_item(
    client: ExecutorClient,
    loaded: LoadedSet,
    item: ItemBase,
    repeats: int,
    cuda_devices: int,
    max_timeout_s: float = DEFAULT_MAX_TIMEOUT_S,
) -> ItemReport:
    """Verify one item: run it `repeats` times, prove any hang, probe randomness, run the fix."""
    if not isinstance(item, EXECUTABLE_KINDS):
        return ItemReport(item.id, Verdict.NOT_EXECUTABLE)
    needed = gpus_needed(item)
    if needed > cuda_devices:
        return ItemReport(
            item.id,
            Verdict.NEEDS_GPUS,
            notes=[f"needs {needed} GPU(s); this executor has {cuda_devices}"],
        )
    try:
        observations = _observe_runs(
            client, loaded.code[item.id], loaded.fixed_code.get(item.id), item, repeats,
            max_timeout_s,
        )  # fmt: skip
    except _Unavailable as error:
        return ItemReport(
            item.id, Verdict.FAIL, problems=[str(error.cause)], observations=error.observations
        )
    return judge(item, observations)


def verify_proof(
    client: ExecutorClient,
    proof_id: str,
    proof: InlineProof,
    code: str,
    repeats: int,
    cuda_devices: int,
    max_timeout_s: float = DEFAULT_MAX_TIMEOUT_S,
) -> ItemReport:
    """Verify a proof as a key is verified: the same runs, hang proof and randomness probe."""
    needed = gpus_needed(proof)
    if needed > cuda_devices:
        return ItemReport(
            proof_id,
            Verdict.NEEDS_GPUS,
            notes=[f"needs {needed} GPU(s); this executor has {cuda_devices}"],
        )
    try:
        observations = _observe_runs(client, code, None, proof, repeats, max_timeout_s)
    except _Unavailable as error:
        return ItemReport(
            proof_id, Verdict.FAIL, problems=[str(error.cause)], observations=error.observations
        )
    return judge_proof(proof_id, proof.outcome, observations)


class _Unavailable(Exception):
    """The executor went away mid-way: the cause and what was observed before."""

    def __init__(self, cause: ExecutorUnavailable, observations: list[Observation]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.observations = observations


def _observe_runs(
    client: ExecutorClient,
    code: str,
    fixed: str | None,
    item: Any,
    repeats: int,
    max_timeout_s: float,
) -> list[Observation]:
    """Run an item's (or a proof's) snippet `repeats` times, prove any hang with a longer
    limit, probe randomness with more runs, then run the fixed code (if any)."""
    observations: list[Observation] = []
    try:
        for _ in range(repeats):
            observations.append(observe(client, code, item))
            if observations[-1].result.status is RunStatus.TIMEOUT:
                break  # a time-out takes the whole limit: prove it once, with a longer one
        if any(o.result.status is RunStatus.TIMEOUT for o in observations):
            longer = long_limit(item.launch.timeout_s, max_timeout_s)
            rerun = observe(client, code, item, timeout_s=longer)
            observations.append(dataclasses.replace(rerun, long_limit=True))
        elif _drew_unseeded(observations):
            for _ in range(EXTRA_RUNS_FOR_RANDOMNESS):
                if _output_varied(observations):
                    break
                observations.append(observe(client, code, item))
        if fixed is not None:
            for _ in range(repeats):
                run = observe(client, fixed, item)
                observations.append(dataclasses.replace(run, fixed=True))
                if run.result.status is not RunStatus.OK:
                    break
    except ExecutorUnavailable as error:
        raise _Unavailable(error, observations) from error
    return observations


def describe_rank(rank: RankResult) -> str:
    """One rank's observed result, for evidence in reports."""
    parts = [f"rank {rank.rank}: {rank.status.value}"]
    if rank.exit_code not in (0, None) or rank.status is not RankStatus.OK:
        parts.append(f"exit {rank.exit_code}")
    if rank.exception is not None:
        parts.append(f"{rank.exception.type}: {rank.exception.message.splitlines()[0][:200]}")
    if rank.stdout:
        parts.append(f"stdout {rank.stdout!r}")
    return ", ".join(parts)

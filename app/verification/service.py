"""Run every executable item on an executor and judge its key (`ranklab verify`, the staff view)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from app.challenges.loader import LoadedSet
from app.challenges.schema import EXECUTABLE_KINDS, Backend, ItemBase
from app.executor_client import ExecutorClient, ExecutorUnavailable
from app.verification.rules import ItemReport, Observation, Verdict, judge
from executor.contract import OutputEvent, RankResult, RankStatus, RunRequest, RunResult, RunStatus


def gpus_needed(item: Any) -> int:
    """CUDA devices an item needs: what it declares, and one per rank for NCCL."""
    launch = item.launch
    return max(launch.gpus, launch.nproc if launch.backend is Backend.NCCL else 0)


def observe(client: ExecutorClient, code: str, item: Any) -> Observation:
    """Run a snippet once, uncached, noting which rank printed first, second, …"""
    request = RunRequest(
        code=code,
        nproc=item.launch.nproc,
        backend=item.launch.backend.value,
        timeout_s=item.launch.timeout_s,
        use_cache=False,
    )
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
    return Observation(result, tuple(order))


def verify_item(
    client: ExecutorClient, loaded: LoadedSet, item: ItemBase, repeats: int, cuda_devices: int
) -> ItemReport:
    """Verify one item: run it `repeats` times (once if it hangs) and judge the key."""
    if not isinstance(item, EXECUTABLE_KINDS):
        return ItemReport(item.id, Verdict.NOT_EXECUTABLE)
    needed = gpus_needed(item)
    if needed > cuda_devices:
        return ItemReport(
            item.id,
            Verdict.NEEDS_GPUS,
            notes=[f"needs {needed} GPU(s); this executor has {cuda_devices}"],
        )
    code = loaded.code[item.id]
    observations: list[Observation] = []
    try:
        for _ in range(repeats):
            observation = observe(client, code, item)
            observations.append(observation)
            if observation.result.status is RunStatus.TIMEOUT:
                break  # a hang takes the whole timeout; once is proof enough
    except ExecutorUnavailable as error:
        return ItemReport(item.id, Verdict.FAIL, problems=[str(error)], observations=observations)
    return judge(item, observations)


def verify_sets(
    client: ExecutorClient, sets: list[LoadedSet], repeats: int = 3
) -> Iterator[tuple[LoadedSet, ItemReport]]:
    """Verify every item of every set, yielding reports as they come."""
    health = client.health() or {}
    cuda_devices = int(health.get("cuda_devices", 0) or 0)
    for loaded in sets:
        for item in loaded.challenge_set.items:
            yield loaded, verify_item(client, loaded, item, repeats, cuda_devices)


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

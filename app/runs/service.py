"""Run it: relay the executor's live per-rank output to the browser as server-sent events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Protocol

from app import metrics
from app.challenges.base import Backend, Launch
from app.executor_client import ExecutorClient, ExecutorUnavailable
from executor.contract import OutputEvent, RunRequest

UNAVAILABLE = "Runs are unavailable right now; the question and its explanation still work."


class Launched(Protocol):
    """What can be run: an executable item, or a lab step."""

    @property
    def launch(self) -> Launch: ...


def run_request(
    item: Launched, code: str, *, timeout_s: float | None = None, use_cache: bool = True
) -> RunRequest:
    """The one way an item's snippet becomes a RunRequest: its launch settings, its code."""
    return RunRequest(
        code=code,
        nproc=item.launch.nproc,
        backend=item.launch.backend.value,
        timeout_s=timeout_s or item.launch.timeout_s,
        launcher=item.launch.launcher.value,
        gpus=item.launch.gpus,
        use_cache=use_cache,
    )


def _event(name: str, payload: object) -> str:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n"


def sse_events(executor: ExecutorClient, request: RunRequest) -> Iterator[str]:
    """Yield SSE frames: `output` per chunk, then `result` (or `unavailable` on failure)."""
    try:
        for event in executor.stream(request):
            if isinstance(event, OutputEvent):
                yield _event("output", event.model_dump(mode="json"))
            else:
                metrics.count_run("run_it", event.status.value)
                yield _event("result", event.model_dump(mode="json"))
    except ExecutorUnavailable:
        yield _event("unavailable", {"message": UNAVAILABLE})


def available(executor: ExecutorClient) -> bool:
    """Whether the executor answers its health check (a short timeout)."""
    return executor.health() is not None


def gpus_needed(item: Launched) -> int:
    """CUDA devices an item needs: what it declares, and one per rank for NCCL."""
    launch = item.launch
    return max(launch.gpus, launch.nproc if launch.backend is Backend.NCCL else 0)


def run_panel(executor: ExecutorClient, item: Launched) -> dict[str, Any]:
    """What the Run it panel shows: whether runs are available, and the GPUs the snippet needs
    when the executor has fewer (it would refuse the run: the panel says why instead)."""
    health = executor.health()
    needed = gpus_needed(item)
    here = int((health or {}).get("cuda_devices") or 0)
    return {
        "nproc": item.launch.nproc,
        "available": health is not None,
        "gpus_missing": needed if needed > here else 0,
        "gpus_here": here,
    }

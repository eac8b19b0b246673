"""Pure limit logic: request checks, per-run resource limits, backend choice and status rules.

Standard library and pydantic only, so it is tested without fixtures and imported anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from executor.contract import RankStatus, RunRequest, RunStatus

MIB = 1024 * 1024


class Limits(BaseModel):
    """What one run may use; defaults fit a 2-core, few-GiB machine."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_nproc: int = Field(default=8, ge=1)
    max_code_bytes: int = Field(default=64 * 1024, ge=1)
    min_timeout_s: float = Field(default=0.5, gt=0)
    max_timeout_s: float = Field(default=60.0, gt=0)
    memory_bytes_per_rank: int = Field(default=512 * MIB, description="cgroup memory per rank.")
    memory_bytes_per_gpu_rank: int = Field(
        default=4096 * MIB,
        description="cgroup memory per rank of a run whose backend is NCCL (one GPU per rank): "
        "a CUDA context alone takes several hundred MiB of host memory, and the CUDA and NCCL "
        "libraries, pinned buffers and NCCL's shared-memory transport add to it; 512 MiB would "
        "OOM-kill a rank before its first collective.",
    )
    memory_bytes_base: int = Field(default=256 * MIB, description="cgroup memory on top of ranks.")
    tcp_bytes_per_run: int = Field(
        default=48 * MIB,
        ge=1 * MIB,
        description="TCP socket buffer memory of a whole run, on cgroup v1 (v2 counts it in "
        "the run's memory). gloo's peak, measured: 27 MiB for 4 ranks all-reducing and "
        "all-gathering 16 MiB tensors, 14 MiB for 2, 6.5 MiB for a 4-rank DDP step. The "
        "sandbox also keeps it under the host's tcp_mem pressure floor over twice its slots.",
    )
    pids_per_rank: int = Field(
        default=64, description="Processes+threads per rank (gloo uses ~20)."
    )
    output_bytes_per_rank: int = Field(default=64 * 1024)
    output_bytes_total: int = Field(default=256 * 1024)
    open_files: int = Field(default=256)
    file_bytes: int = Field(default=16 * MIB, description="Largest file a rank may write.")
    tmp_bytes: int = Field(default=64 * MIB, description="Size of the private writable /tmp.")
    shm_bytes: int = Field(
        default=1024 * MIB,
        description="Size cap of the private /dev/shm (NCCL wants >= 1 GiB); the memory cgroup "
        "still bounds what is really used.",
    )
    exception_message_chars: int = Field(default=2000)


class LimitViolation(ValueError):
    """A request outside the limits; `status_code` is the HTTP status to answer with."""

    def __init__(self, message: str, status_code: int = 422) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


def max_body_bytes(limits: Limits) -> int:
    """Return the largest request body to read: the largest code, every byte JSON-escaped."""
    # A control character is six bytes in JSON ("\u0001"); the other fields take a few dozen.
    return 6 * limits.max_code_bytes + 4096


def check_request(request: RunRequest, limits: Limits) -> None:
    """Raise LimitViolation with a clear message when a request is outside the limits."""
    try:
        size = len(request.code.encode("utf-8"))
    except UnicodeEncodeError as error:  # JSON's "\ud800" escape decodes to a lone surrogate
        bad = error.object[error.start]
        raise LimitViolation(
            "code must be Unicode text that UTF-8 can encode: "
            f"character {error.start} is a lone surrogate ({bad!a})"
        ) from None
    if size > limits.max_code_bytes:
        raise LimitViolation(
            f"code is {size} bytes; the limit is {limits.max_code_bytes} bytes", status_code=413
        )
    if not 1 <= request.nproc <= limits.max_nproc:
        raise LimitViolation(
            f"nproc must be between 1 and {limits.max_nproc} (got {request.nproc})"
        )
    timeout = request.timeout_s
    if not math.isfinite(timeout) or not limits.min_timeout_s <= timeout <= limits.max_timeout_s:
        raise LimitViolation(
            f"timeout_s must be between {limits.min_timeout_s:g} and "
            f"{limits.max_timeout_s:g} seconds (got {timeout:g})"
        )


def gpus_needed(requested: str, nproc: int, host_gpus: int, declared: int = 0) -> int:
    """How many GPUs a run must hold: one per rank for NCCL (NCCL refuses two ranks on one GPU),
    and at least those the run declares (`RunRequest.gpus`).

    auto means NCCL where the host has a GPU per rank (its size, not what is free now, so the
    backend a snippet gets never depends on the load), gloo, with no GPU, everywhere else.
    """
    if requested == "nccl" or (requested == "auto" and host_gpus >= nproc):
        return max(nproc, declared)
    return declared


def check_gpus(request: RunRequest, host_gpus: int) -> int:
    """Return the GPUs the request needs; raise LimitViolation if this host never has them."""
    needed = gpus_needed(request.backend, request.nproc, host_gpus, request.gpus)
    if needed > host_gpus:
        why = "one GPU per rank" if needed == request.nproc else f"it declares {request.gpus}"
        raise LimitViolation(
            f"this run needs {needed} GPUs (backend {request.backend}: {why}); this "
            f"executor has {host_gpus}"
        )
    return needed


def resolve_backend(requested: str, gpus: int, nproc: int) -> str:
    """Pick the process-group backend from the GPUs the run holds: auto means nccl only with
    one GPU per rank."""
    if requested == "auto":
        return "nccl" if gpus >= nproc else "gloo"
    return requested


# NCCL's shared-memory transport between ranks of one host wants at least this much /dev/shm.
NCCL_SHM_BYTES = 1024 * MIB


def shm_bytes(limits: Limits, gpu: bool) -> int:
    """Size of a run's private /dev/shm: never under NCCL's 1 GiB for a run on GPUs."""
    return max(limits.shm_bytes, NCCL_SHM_BYTES) if gpu else limits.shm_bytes


@dataclass(frozen=True)
class RunBudget:
    """The concrete OS limits for one run, derived from the request and Limits."""

    memory_bytes: int
    pids: int
    cpu_seconds: int
    open_files: int
    file_bytes: int
    tmp_bytes: int
    output_bytes_per_rank: int
    output_bytes_total: int
    tcp_bytes: int = 48 * MIB  # socket buffers, cgroup v1 only (sandbox.tcp_limit)


def run_budget(
    nproc: int, timeout_s: float, limits: Limits, backend: str = "gloo", gpus: int = 0
) -> RunBudget:
    """Compute the cgroup and rlimit values for a run of nproc ranks on `backend` (resolved)
    holding `gpus` GPUs: a run on GPUs needs room for a CUDA context in each rank."""
    gpu = backend == "nccl" or gpus > 0  # NCCL holds one GPU per rank; others may declare some
    per_rank = limits.memory_bytes_per_gpu_rank if gpu else limits.memory_bytes_per_rank
    return RunBudget(
        memory_bytes=limits.memory_bytes_base + nproc * per_rank,
        pids=16 + nproc * limits.pids_per_rank,
        # CPU seconds per process: a rank cannot burn more than the wall budget on every core,
        # the wall deadline fires first; this only bounds a process that escapes the deadline.
        cpu_seconds=math.ceil(timeout_s) + 2,
        open_files=limits.open_files,
        file_bytes=limits.file_bytes,
        tmp_bytes=limits.tmp_bytes,
        output_bytes_per_rank=limits.output_bytes_per_rank,
        output_bytes_total=limits.output_bytes_total,
        tcp_bytes=limits.tcp_bytes_per_run,
    )


def rank_status(wait_code: int | None, timed_out: bool) -> tuple[RankStatus, int | None]:
    """Judge a rank by how the kernel says it ended, never by what the rank wrote about itself.

    wait_code is the process exit code (-N for signal N), or None when it never ended. A rank's
    own record (fd 3) is written by a process that runs the snippet, so the snippet can forge it;
    it may only add detail (the exception), never the status. Ranks end with os._exit right after
    recording, so the teardown aborts of trap 4 cannot turn a finished rank into a failure.
    """
    if wait_code is None:
        return (RankStatus.TIMEOUT if timed_out else RankStatus.KILLED), None
    if wait_code < 0:
        return (RankStatus.TIMEOUT if timed_out else RankStatus.KILLED), wait_code
    return (RankStatus.OK if wait_code == 0 else RankStatus.ERROR), wait_code


def run_status(
    ranks: Sequence[RankStatus],
    *,
    timed_out: bool = False,
    memory_exceeded: bool = False,
    output_exceeded: bool = False,
) -> RunStatus:
    """Combine rank outcomes and limit events into the run status (most severe cause first)."""
    if memory_exceeded:
        return RunStatus.MEMORY_LIMIT
    if output_exceeded:
        return RunStatus.OUTPUT_LIMIT
    if timed_out:
        return RunStatus.TIMEOUT
    if any(status is not RankStatus.OK for status in ranks):
        return RunStatus.ERROR
    return RunStatus.OK

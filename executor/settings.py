"""Executor settings: one pydantic-settings class, env prefix RANKLAB_EXECUTOR_."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from executor.limits import Limits

PACKAGE_PARENT = Path(__file__).resolve().parent.parent


class ExecutorSettings(BaseSettings):
    """How the executor runs: sandbox or trusted, capacity, cache, limits."""

    model_config = SettingsConfigDict(env_prefix="RANKLAB_EXECUTOR_", extra="ignore")

    trusted: bool = Field(
        default=False, description="Run without the sandbox: only for instructor-authored content."
    )
    token: str | None = Field(
        default=None,
        description="Shared secret the run API requires (Authorization: Bearer TOKEN); required "
        "to listen beyond loopback.",
    )
    warm: bool = Field(default=True, description="Preload what DDP imports lazily at start-up.")
    warm_compile: bool = Field(
        default=False,
        description="Also preload what torch.compile imports (verify's executor): a compile run "
        "takes about half as long, every other run about 12% longer (a larger parent to fork).",
    )
    max_concurrent_runs: int = Field(
        default_factory=lambda: max(1, os.cpu_count() or 1),
        description="Runs executing at once; gloo ranks are CPU-bound, so about one per core.",
    )
    queue_limit: int = Field(default=16, description="Runs waiting for a slot before 503.")
    retry_after_s: int = Field(default=1, description="Retry-After sent with a 503.")
    cache_entries: int = Field(default=1024, description="Results kept in memory (LRU).")
    cache_dir: Path | None = Field(default=None, description="Optional on-disk result cache.")
    exposed_paths: list[str] = Field(
        default_factory=list,
        description="Extra host directories ranks may read (read-only, at the same path), e.g. a "
        "data set. Ranks see nothing else of the host but /usr, the Python install and its "
        "packages (an allow-list; see executor/sandbox.py).",
    )
    cgroup_root: str = Field(
        default="/sys/fs/cgroup",
        description="Where the cgroups are: a cgroup v1 layout (memory/, pids/...) or a cgroup v2 "
        "hierarchy (or an empty, delegated v2 cgroup), told apart by cgroup.controllers.",
    )
    gpus: str | None = Field(
        default=None,
        description='GPUs runs may use, as nvidia-smi indices or UUIDs ("0,1"), or "none". '
        "Unset: every GPU the driver lists, narrowed by CUDA_VISIBLE_DEVICES if the executor "
        "was started with it. NCCL runs hold one GPU per rank.",
    )
    cpu_fairness: bool = Field(
        default=False,
        description="Give each slot an equal-weight cpu cgroup (a fork bomb cannot starve "
        "concurrent runs) at a 15-20% throughput cost on 2 cores.",
    )
    reseed_after_fork: bool = Field(
        default=True,
        description="Reseed torch, random and numpy from fresh entropy in every rank, as a fresh "
        "process would be (off only to show what the parity suite catches).",
    )
    siblings: int = Field(
        default=2,
        ge=0,
        le=7,
        description="Extra warm parents, each a separate interpreter with its own hash secret; "
        "every run draws its ranks' parents at random, so with N siblings runs of up to N+1 "
        "ranks have a distinct secret per rank (set iteration order differs, as under "
        "torchrun). Each costs one more warm process (~150 MB).",
    )
    python: str = Field(default=sys.executable, description="Interpreter that runs the zygote.")
    startup_timeout_s: float = 120.0
    limits: Limits = Field(default_factory=Limits)

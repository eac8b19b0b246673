"""Slots: where runs go from request to result.

A Slot lives in a slot worker (a fork of the zygote that serves one run at a time); each run
gets a fresh Cell (its own init, namespaces and pipes), so one bad run cannot touch the next.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from executor import identities, sandbox, siblings
from executor.cell import Cell, Send, budget_ranks
from executor.contract import RunStatus
from executor.gpus import Gpu
from executor.limits import Limits, resolve_backend, run_budget


@dataclass(frozen=True)
class ZygoteContext:
    """What every run needs to know about the warm process it was forked from."""

    trusted: bool
    plan: sandbox.SandboxPlan | None
    sandbox_error: str | None
    limits: Limits
    torch_version: str
    python_version: str
    gpus: tuple[Gpu, ...] = ()  # the host's GPUs runs may use (found by the service, gpus.py)
    reseed: bool = True
    sibling_dir: str | None = None  # where the siblings' workers listen (see siblings.py)
    siblings: int = 0


def now_iso() -> str:
    """Return the current UTC time in ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Slot:
    """One run at a time, from a long-lived worker that sits in its own cgroups.

    Between runs it pre-stages the next cell (init with its namespaces and mounts ready), so a
    request only pays for forking the ranks.
    """

    def __init__(self, name: str, ctx: ZygoteContext, index: int = 0) -> None:
        self.ctx = ctx
        self.sibling_paths = [
            siblings.socket_path(ctx.sibling_dir, sibling, index)
            for sibling in range(ctx.siblings)
            if ctx.sibling_dir is not None
        ]
        self.plan = None if ctx.trusted else ctx.plan
        self.cgroups: sandbox.SlotCgroups | None = None
        self.own_pid_namespace = -1
        self.cell: Cell | None = None
        if self.plan is not None:
            # A uid of the slot's own: per-uid kernel counts (threads, inotify) stay per run.
            try:
                uid = identities.claim()
            except (OSError, identities.NoFreeIdentity) as error:
                raise sandbox.SandboxError(f"no sandbox uid for the slot: {error}") from error
            self.plan = dataclasses.replace(self.plan, uid=uid, gid=uid)
            self.cgroups = sandbox.SlotCgroups.for_plan(self.plan, name)
            self.cgroups.join()
            self.own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)

    def prepare(self, gpus: tuple[Gpu, ...] = ()) -> None:
        """Fork the next run's init (isolated when sandboxed), waiting for its request.

        Staged ahead for a run without GPUs, the common case; a run holding GPUs gets a cell
        staged for exactly those (their device nodes are part of its root), at a few ms more.
        """
        refusing = not self.ctx.trusted and self.plan is None  # untrusted without a sandbox
        if self.cell is not None and self.cell.gpus != gpus:
            self.cell.discard()
            self.cell = None
        if self.cell is None and not refusing:
            self.cell = Cell.start(
                self.ctx, self.plan, self.cgroups, self.own_pid_namespace, self.sibling_paths,
                gpus,
            )  # fmt: skip

    def run(self, request: dict[str, Any], send: Send) -> dict[str, Any]:
        """Run one request to completion, streaming output through send; return the result.

        `request["gpus"]` lists the GPUs the service gave the run (gpus.GpuAllocator), in rank
        order; the backend follows from them.
        """
        started = time.monotonic()
        nproc, timeout_s = int(request["nproc"]), float(request["timeout_s"])
        gpus = tuple(Gpu.from_dict(gpu) for gpu in request.get("gpus", []))
        backend = resolve_backend(request["backend"], len(gpus), nproc)
        environment = {
            "torch": self.ctx.torch_version,
            "backend": backend,
            "device": "cuda" if backend == "nccl" else "cpu",
            "nproc": nproc,
            "python": self.ctx.python_version,
        }
        result: dict[str, Any] = {"environment": environment, "observed_at": now_iso()}
        if not self.ctx.trusted and self.plan is None:
            message = (
                f"sandbox unavailable ({self.ctx.sandbox_error}); refusing to run untrusted "
                "code. Trusted mode (--trusted) is only for instructor-authored content."
            )
            return {**result, "status": RunStatus.REJECTED, "duration_ms": 0, "message": message}
        launcher = request.get("launcher", "torchrun")
        environment["launcher"] = launcher
        budget = run_budget(
            budget_ranks(nproc, launcher), timeout_s, self.ctx.limits, backend, len(gpus)
        )
        try:
            if self.cgroups is not None:
                self.cgroups.set_limits(budget)
            self.prepare(gpus)
            assert self.cell is not None
            cell, self.cell = self.cell, None
            outcome = cell.execute(request, budget, send, started + timeout_s, backend)
        except sandbox.SandboxError as error:
            outcome = {"status": RunStatus.REJECTED, "message": f"sandbox setup failed: {error}"}
        outcome["duration_ms"] = int((time.monotonic() - started) * 1000)
        return {**result, "ranks": [], **outcome}

"""A slot worker: one run at a time, from a long-lived fork of the zygote in the slot's cgroups.

It claims the slot's uid, joins its cgroups, forks its stager (stager.py) and only then accepts
requests. It receives each request and pumps its output (driver.py), but never forks a process
that runs code: the stager does, from a heap that never held a request.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
import traceback
from typing import Any, NoReturn

from executor import identities, sandbox, siblings
from executor.context import ZygoteContext, now_iso
from executor.contract import RunStatus
from executor.driver import RunDriver
from executor.gpus import Gpu
from executor.limits import resolve_backend, run_budget
from executor.output import Send
from executor.stager import Stager
from executor.wire import budget_ranks

# A service that stops reading must not stall the slot: its deadline and output caps are
# enforced between sends. After this long without progress the run is treated as orphaned.
SEND_TIMEOUT_S = 5.0


class Slot:
    """One run at a time; between runs its stager has the next run's init staged.

    Staged ahead (init with its namespaces and mounts ready, siblings' ranks waiting in it), a
    request only pays for forking the ranks.
    """

    def __init__(
        self, name: str, ctx: ZygoteContext, index: int = 0, listener: int | None = None
    ) -> None:
        self.ctx = ctx
        self.sibling_paths = [
            siblings.socket_path(ctx.sibling_dir, sibling, index)
            for sibling in range(ctx.siblings)
            if ctx.sibling_dir is not None
        ]
        self.plan = None if ctx.trusted else ctx.plan
        self.cgroups: sandbox.SlotCgroups | None = None
        own_pid_namespace = -1
        self.driver: RunDriver | None = None
        self.ending: RunDriver | None = None  # the last run, until its init has ended
        self.stager: Stager | None = None
        if self.plan is not None:
            # A uid of the slot's own: per-uid kernel counts (threads, inotify) stay per run.
            try:
                uid = identities.claim()
            except (OSError, identities.NoFreeIdentity) as error:
                raise sandbox.SandboxError(f"no sandbox uid for the slot: {error}") from error
            self.plan = dataclasses.replace(self.plan, uid=uid, gid=uid)
            self.cgroups = sandbox.SlotCgroups.for_plan(self.plan, name)
            self.cgroups.join()
            own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
        if ctx.trusted or self.plan is not None:  # untrusted without a sandbox refuses runs
            closed = () if listener is None else (listener,)
            self.stager = Stager.start(ctx, self.plan, own_pid_namespace, closed)

    def prepare(self, gpus: tuple[Gpu, ...] = ()) -> None:
        """Have the stager stage the next run (isolated when sandboxed), waiting for its request.

        Staged ahead for a run without GPUs, the common case; a run holding GPUs gets a cell
        staged for exactly those (their device nodes are part of its root), at a few ms more.
        """
        if self.ending is not None:
            self.ending.settle()  # the last run's init ends before the next is staged
            self.ending = None
        if self.driver is not None and self.driver.gpus != gpus:
            self.driver.discard()
            self.driver = None
        if self.driver is None and self.stager is not None:
            cell = self.stager.stage(gpus)
            self.driver = RunDriver(self.ctx, cell, self.plan, self.cgroups, self.stager.pid,
                                    self.sibling_paths, gpus)  # fmt: skip
            self.driver.stage_siblings()

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
            assert self.driver is not None
            driver, self.driver = self.driver, None
            self.ending = driver  # settled by the next prepare(), after the answer is sent
            outcome = driver.execute(request, budget, send, started + timeout_s, backend)
        except sandbox.SandboxError as error:
            outcome = {"status": RunStatus.REJECTED, "message": f"sandbox setup failed: {error}"}
        outcome["duration_ms"] = int((time.monotonic() - started) * 1000)
        return {**result, "ranks": [], **outcome}


def serve(listener: socket.socket, context: ZygoteContext, index: int, zygote: int) -> NoReturn:
    """Be slot `index`'s worker: accept runs one at a time from the shared listener."""
    try:
        sandbox.die_with_parent()  # if the zygote goes, so do its slots (and their runs)
        if os.getppid() != zygote:
            os._exit(0)  # it went before the line above took effect
        name = f"slot-{zygote}-{index}"
        try:
            slot = Slot(name, context, index, listener.fileno())
        except sandbox.SandboxError as error:
            # Serve every request of this slot as `rejected` (with the reason) rather than
            # crash-looping or leaving requests unanswered.
            failed = dataclasses.replace(context, plan=None, sandbox_error=str(error))
            slot = Slot(name, failed)
        _prepare(slot)
        while True:
            connection, _ = listener.accept()
            with connection:
                _handle(connection, slot)
            _prepare(slot)
    except BaseException:
        traceback.print_exc()
    os._exit(1)


def _prepare(slot: Slot) -> None:
    try:
        slot.prepare()
    except sandbox.SandboxError:
        traceback.print_exc()  # staged again at the request, which is refused if it fails again
        if slot.stager is not None and not slot.stager.alive():
            raise SystemExit(1) from None  # the zygote starts this slot worker afresh


def _handle(connection: socket.socket, slot: Slot) -> None:
    connection.settimeout(SEND_TIMEOUT_S)
    stream = connection.makefile("rwb")

    def send(event: dict[str, Any]) -> None:
        stream.write(json.dumps(event).encode() + b"\n")
        stream.flush()

    # The run watches this socket too: when the service hangs up (the learner pressed Stop, or
    # went away), the ranks are killed at once, not at their next output or their deadline.
    send.hangup_fd = connection.fileno()  # type: ignore[attr-defined]

    try:
        request = json.loads(stream.readline())
        result = slot.run(request, send)
    except Exception as error:  # an executor bug, not the snippet's fault
        traceback.print_exc()
        result = {"status": "internal_error", "duration_ms": 0, "message": repr(error)}
    try:
        send({"event": "result", "result": result})
        stream.close()
    except OSError:
        pass

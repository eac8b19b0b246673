"""The warm zygote: import torch (and what DDP imports lazily) once, then keep the slot workers.

Started by `executor.pool` as `python -m executor.zygote` with a scrubbed environment and its JSON
configuration as the first line on stdin (never in argv, which every process can read from /proc):
every rank is a fork of this process, so its memory must hold no secret. Started with role
"sibling", it is one of the extra warm parents that give ranks their own hash secret
(see siblings.py). It never runs a torch
op and starts no thread: forked children of a process with intra-op thread pools hang (trap 2).
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import json
import os
import platform
import select
import signal
import socket
import sys
import time
import warnings
import weakref
from typing import Any

from executor import hugepages, prefault, sandbox, siblings, slot
from executor.context import ZygoteContext
from executor.gpus import Gpu
from executor.limits import Limits
from executor.ports import free_port

# Run once in a throw-away fork to learn which modules a typical DDP snippet imports lazily
# (torch._dynamo, sympy, ...: ~0.9 s on first use, trap 1); the zygote then imports them itself.
WARMUP_SNIPPET = """
import os
import torch, torch.distributed as dist, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
dist.init_process_group("gloo")
model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
torch.optim.Adam(model.parameters())
data = TensorDataset(torch.randn(8, 4), torch.randn(8, 2))
for x, y in DataLoader(data, batch_size=4, sampler=DistributedSampler(data)):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
t = torch.ones(2)
dist.all_reduce(t); dist.broadcast(t, 0); dist.barrier(); dist.all_gather([torch.zeros(2)], t)
print(t, model, loss.item(), model.module.state_dict().keys())
dist.destroy_process_group()
"""
# With the `warm_compile` setting, also what torch.compile imports on first use (dynamo's tracer,
# AOTAutograd, inductor: ~770 modules, 1-2 s of a 2-rank compile run's ranks each, measured).
# Only modules are carried over: the compiling happens in the throw-away fork, so no warm parent
# holds a compiled graph or kernel that one run could leave for another.
COMPILE_WARMUP_SNIPPET = """
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
compiled = torch.compile(DDP(nn.Linear(4, 2)), backend="aot_eager")
compiled(torch.randn(4, 4)).sum().backward()
torch.compile(nn.Linear(2, 1))  # inductor's imports; nothing is compiled (no C++ compiler run)
dist.destroy_process_group()
"""
PROBE_SNIPPET = "import os\nprint('uid', os.getuid())\n"
PLACEHOLDER_UID = 65534


def main() -> None:
    """Start the zygote described by the JSON config on stdin's first line; serve until EOF."""
    config = json.loads(sys.stdin.readline())
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")  # before torch is imported, or it has no effect (trap 3)
    started = time.monotonic()
    torch_version = _import_torch()
    modules = config.get("modules")
    if config.get("role") == "sibling" and modules is None:
        # Started beside the main zygote, not after it: torch's import (the bulk of a warm
        # parent's start) overlaps the main one's; the modules to warm follow on stdin once the
        # main zygote has found them (pool.py).
        line = sys.stdin.readline()
        if not line:
            return  # the service gave up on this start
        modules = json.loads(line)["modules"]
    elif modules is None:
        modules = _modules_to_warm(config)
        if config.get("siblings"):
            print(json.dumps({"event": "modules", "modules": modules}), flush=True)
    modules = _warm(config["warm"], modules)
    # Found by the service (gpus.discover) without CUDA: this process must never start CUDA,
    # or no rank forked from it could use it (trap 11).
    gpus = tuple(Gpu.from_dict(gpu) for gpu in config.get("gpus", []))
    limits = Limits.model_validate(config["limits"])
    context = ZygoteContext(
        trusted=config["trusted"],
        plan=None,
        sandbox_error=None,
        limits=limits,
        torch_version=torch_version,
        python_version=platform.python_version(),
        gpus=gpus,
        reseed=config.get("reseed", True),
        sibling_dir=config.get("sibling_dir"),
        siblings=int(config.get("siblings", 0)),
    )
    if config.get("role") == "sibling":
        _serve_as_sibling(config, context, started)
        return
    if not config["trusted"]:
        context = _probe_sandbox(context, config)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(config["socket"])
    os.chmod(config["socket"], 0o600)
    listener.listen(128)
    ready = {
        "event": "ready",
        "torch": torch_version,
        "python": context.python_version,
        "cuda_devices": len(gpus),
        "gpus": [
            {"index": gpu.index, "name": gpu.name, "memory_bytes": gpu.memory_bytes} for gpu in gpus
        ],
        "trusted": context.trusted,
        "sandbox_error": context.sandbox_error,
        "threads": len(os.listdir("/proc/self/task")),
        "modules": modules,
    }
    # Move every object the preload created out of the collector's reach: a collection in a
    # forked rank would otherwise walk (and so copy-on-write) the whole inherited heap.
    _keep_preload_finalizers_from_exit()
    gc.collect()
    gc.freeze()
    ready["huge_pages_mb"] = hugepages.collapse_heap()  # cheaper forks (hugepages.py)
    context = _with_hot_pages(context, config)
    ready["hot_pages_mb"] = sum(length for _, length in context.hot_pages) // (1024 * 1024)
    ready["startup_s"] = round(time.monotonic() - started, 3)
    print(json.dumps(ready), flush=True)
    _serve(listener, context, int(config["slots"]))


def _serve_as_sibling(config: dict[str, Any], context: ZygoteContext, started: float) -> None:
    """Serve the main zygote's slots as one more warm parent with its own hash secret."""
    if not config["trusted"]:
        plan = sandbox.make_plan(
            config["exposed"],
            uid=PLACEHOLDER_UID,  # each rank runs as its slot's uid, sent with the request
            gid=PLACEHOLDER_UID,
            cgroup_root=config["cgroup_root"],
            cpu_fairness=config["cpu_fairness"],
        )
        context = dataclasses.replace(context, plan=plan)
    slot_names = [f"slot-{config['main_pid']}-{index}" for index in range(config["slots"])]
    _keep_preload_finalizers_from_exit()
    gc.collect()
    gc.freeze()
    huge_pages_mb = hugepages.collapse_heap()  # cheaper forks (hugepages.py)
    context = _with_hot_pages(context, config)
    assert context.sibling_dir is not None
    ready = {"event": "ready", "sibling": config["sibling"], "huge_pages_mb": huge_pages_mb,
             "startup_s": round(time.monotonic() - started, 3)}  # fmt: skip
    # Listen before saying ready, so that the first run can already use this parent.
    siblings.serve(
        context, context.sibling_dir, config["sibling"], slot_names,
        on_listening=lambda: print(json.dumps(ready), flush=True),
    )  # fmt: skip


def _with_hot_pages(context: ZygoteContext, config: dict[str, Any]) -> ZygoteContext:
    """The context, with the pages a run writes learned from the warm-up snippet (prefault.py);
    last, once the parent's heap is as its forks will find it."""
    if not config["warm"]:
        return context
    environment = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
                   "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}  # fmt: skip
    return dataclasses.replace(context, hot_pages=prefault.learn(WARMUP_SNIPPET, environment))


def _modules_to_warm(config: dict[str, Any]) -> list[str]:
    """What the warm-up snippet imports lazily, found in a throw-away fork (none when cold).
    Nothing here may call torch.cuda (see main)."""
    return _modules_used_by(_warmup_snippet(config)) if config["warm"] else []


def _warmup_snippet(config: dict[str, Any]) -> str:
    """What the throw-away fork runs to find the modules to warm: a DDP step, and with
    `warm_compile` a torch.compile step (each in a process group of its own)."""
    if config.get("warm_compile"):
        return WARMUP_SNIPPET + COMPILE_WARMUP_SNIPPET
    return WARMUP_SNIPPET


def _import_torch() -> str:
    """Import torch and the parts every run uses; return its version (no torch.cuda here)."""
    import numpy  # noqa: F401  (without it torch warns into every snippet's output, trap 10)
    import torch
    import torch.distributed
    import torch.multiprocessing
    import torch.nn.parallel
    import torch.utils.data

    return str(torch.__version__)


def _warm(warm: bool, modules: list[str] | None) -> list[str]:
    """When warm, import `modules` (what a DDP snippet imports lazily); return them."""
    # They add warning filters as they import (sympy: once SymPyDeprecationWarning) that a
    # snippet importing torch would not have: keep torch's own.
    torch_filters = list(warnings.filters)
    for name in modules or []:
        if warm:
            try:
                importlib.import_module(name)
            except Exception:  # some modules only import in special contexts; not needed then
                continue
    warnings.filters[:] = torch_filters  # type: ignore[index]
    warnings._filters_mutated()  # type: ignore[attr-defined]
    return modules or []


def _keep_preload_finalizers_from_exit() -> None:
    """Keep a rank's exit from running the finalizers the preload registered.

    torch registers a weakref.finalize per operator library it loads (torch.library's
    _del_library: 174 after the preload) to unregister it when the interpreter exits. A rank
    runs the exit functions (atexit, weakref.finalize) for the snippet's sake, and these alone
    took 45 ms per rank on an idle core and 50-100 ms under load, to undo registrations in a
    process that then _exits: nothing a snippet can see. Finalizers the snippet registers
    itself still run at its exit, as they would under torchrun.
    """
    for finalizer in list(weakref.finalize._registry):  # type: ignore[attr-defined]
        # Detached, not only kept from the exit: the exit's walk of the registry (and the
        # copy-on-write faults of touching each one) took 1 ms of every rank's end. The
        # libraries they would unregister live as long as the warm parent anyway.
        finalizer.detach()


def _modules_used_by(code: str) -> list[str]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        before = set(sys.modules)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.environ.update(
            {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
             "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
        )  # fmt: skip
        try:
            exec(compile(code, "warmup.py", "exec"), {"__name__": "__main__"})
        finally:
            names = sorted(set(sys.modules) - before)
            with os.fdopen(write_end, "w") as out:
                json.dump(names, out)
            os._exit(0)
    os.close(write_end)
    chunks = []
    with os.fdopen(read_end) as source:
        ready, _, _ = select.select([source], [], [], 120)
        if ready:
            chunks.append(source.read())
    os.waitpid(pid, 0)
    imported: list[str] = json.loads(chunks[0]) if chunks and chunks[0] else []
    return imported


def _probe_sandbox(context: ZygoteContext, config: dict[str, Any]) -> ZygoteContext:
    """Run a tiny snippet in the full sandbox; any failure disables untrusted runs (fail closed)."""
    plan_kwargs = {
        "uid": PLACEHOLDER_UID,  # every slot claims a uid of its own (identities.py)
        "gid": PLACEHOLDER_UID,
        "cgroup_root": config["cgroup_root"],
        "cpu_fairness": config["cpu_fairness"],
    }
    try:
        if os.geteuid() != 0:
            raise sandbox.SandboxError("the executor is not running as root")
        plan = sandbox.make_plan(config["exposed"], **plan_kwargs)
        _remove_stale_cgroups(plan)
    except (OSError, sandbox.SandboxError) as error:
        return dataclasses.replace(context, plan=None, sandbox_error=str(error))
    candidate = dataclasses.replace(context, plan=plan, sandbox_error=None)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        message = "the sandbox self-test run failed"
        try:
            probe = slot.Slot(f"probe-{os.getppid()}", candidate)
            request = {"code": PROBE_SNIPPET, "nproc": 1, "backend": "gloo", "timeout_s": 20}
            result = probe.run(request, lambda event: None)
            uid = probe.plan.uid if probe.plan is not None else None
            if result["status"] == "ok" and result["ranks"][0]["stdout"] == f"uid {uid}\n":
                message = ""
            else:
                message = f"{message}: {result.get('message') or result}"
        except BaseException as error:
            message = f"{message}: {error}"
        os.write(write_end, message.encode()[:4000])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as source:
        problem = source.read().decode()
    os.waitpid(pid, 0)
    _remove_stale_cgroups(plan, prefix=f"probe-{os.getpid()}", wait_s=1)
    if problem:
        return dataclasses.replace(context, plan=None, sandbox_error=problem)
    return candidate


def _remove_stale_cgroups(plan: sandbox.SandboxPlan, prefix: str = "", wait_s: float = 0) -> None:
    """Remove the slot cgroups whose names start with prefix; wait for dying members."""
    give_up = time.monotonic() + wait_s
    while True:
        left = 0
        for parent in sandbox.slot_cgroup_parents(plan.cgroup_root):
            names = os.listdir(parent) if os.path.isdir(parent) else []
            for name in names:
                path = os.path.join(parent, name)
                if not (name.startswith(prefix) and os.path.isdir(path)):
                    continue
                if not prefix and _owner_alive(name):
                    continue  # another live executor's slot (a dev server, a test session)
                # A cgroup still in use (a dying run, another executor's slot) refuses rmdir.
                try:
                    os.rmdir(path)
                except OSError:
                    left += 1
        if not left or time.monotonic() >= give_up:
            return
        time.sleep(0.02)


def _owner_alive(name: str) -> bool:
    # Slot cgroups are named slot-<zygote pid>-<index> (probe-<zygote pid> for the self-test).
    parts = name.split("-")
    return len(parts) >= 2 and parts[1].isdigit() and os.path.exists(f"/proc/{parts[1]}")


def _serve(listener: socket.socket, context: ZygoteContext, slots: int) -> None:
    """Keep `slots` slot workers alive until stdin closes (the service is gone)."""
    workers: dict[int, int] = {}
    while True:
        for index in set(range(slots)) - set(workers.values()):
            zygote = os.getpid()
            pid = os.fork()
            if pid == 0:
                slot.serve(listener, context, index, zygote)
            workers[pid] = index
        ready, _, _ = select.select([sys.stdin], [], [], 0.5)
        if ready:
            for pid in workers:
                _kill_quietly(pid)
            if context.plan is not None:
                _remove_stale_cgroups(context.plan, prefix=f"slot-{os.getpid()}-", wait_s=2)
            return
        while workers:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            workers.pop(pid, None)  # a slot worker died (a bug): the loop starts a new one


def _kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


if __name__ == "__main__":
    main()

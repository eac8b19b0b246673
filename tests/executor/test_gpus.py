"""Finding GPUs without CUDA, handing them out one per rank, and what a GPU run's ranks see.

This machine has no GPU: discovery reads a fake /proc tree and fake nvidia-smi output (the
seams), the allocator is driven by asyncio, and nothing here claims CUDA or NCCL were run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from executor import gpus, sandbox
from executor.contract import ExecutorUnavailable, OutputEvent, RunRequest, RunStatus
from executor.gpus import Gpu, GpuAllocator
from executor.limits import MIB, Limits, LimitViolation
from executor.runner import Executor
from executor.service import create_app
from executor.settings import ExecutorSettings

H100 = "NVIDIA H100 80GB HBM3"
INFORMATION = """Model: \t\t {model}
IRQ:   \t\t 0
GPU UUID: \t {uuid}
Video BIOS: \t 96.00.99.00.01
Bus Type: \t PCIe
DMA Size: \t 52 bits
DMA Mask: \t 0xfffffffffffff
Bus Location: \t {bus}
Device Minor: \t {minor}
GPU Excluded:\t No
"""


def fake_proc(root: Path, *cards: tuple[str, str, int]) -> Path:
    """A /proc/driver/nvidia/gpus tree: one directory per PCI bus id, as the driver makes."""
    for bus, uuid, minor in cards:
        (root / bus).mkdir(parents=True)
        (root / bus / "information").write_text(
            INFORMATION.format(model=H100, uuid=uuid, bus=bus, minor=minor)
        )
    root.mkdir(parents=True, exist_ok=True)
    return root


def inventory(count: int) -> tuple[Gpu, ...]:
    return tuple(Gpu(i, f"GPU-{i:04d}-uuid", "Fake GPU", minor=i) for i in range(count))


def no_smi() -> str | None:
    raise AssertionError("nvidia-smi was asked although /proc listed the GPUs")


# Discovery


def test_proc_gpus_are_numbered_in_pci_bus_order_with_their_device_minor(tmp_path: Path) -> None:
    root = fake_proc(
        tmp_path / "gpus",
        ("0000:b8:00.0", "GPU-bbbb", 3),  # created first, but the later bus: index 1
        ("0000:18:00.0", "GPU-aaaa", 0),
    )
    (root / "0000:ff:00.0").mkdir()  # no information file: not a GPU the driver describes
    assert gpus.parse_proc(root) == [
        Gpu(index=0, uuid="GPU-aaaa", name=H100, minor=0),
        Gpu(index=1, uuid="GPU-bbbb", name=H100, minor=3),
    ]


def test_a_host_without_the_nvidia_driver_has_no_proc_gpus(tmp_path: Path) -> None:
    assert gpus.parse_proc(tmp_path / "absent") == []


def test_nvidia_smi_output_is_read_with_names_that_hold_commas() -> None:
    output = (
        "0, GPU-aaaa, 0, 81559, NVIDIA H100 80GB HBM3\n"
        "1, GPU-bbbb, [N/A], 24576, Tesla T4, rev 2\n"
        "WARNING: infoROM is corrupted at gpu 0000:18:00.0\n"
    )
    assert gpus.parse_nvidia_smi(output) == [
        Gpu(0, "GPU-aaaa", H100, minor=0, memory_bytes=81559 * 1024 * 1024),
        Gpu(1, "GPU-bbbb", "Tesla T4, rev 2", minor=1, memory_bytes=24576 * 1024 * 1024),
    ]


def test_discovery_reads_proc_first_and_asks_nvidia_smi_only_without_it(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path / "gpus", ("0000:18:00.0", "GPU-aaaa", 0))
    assert [gpu.uuid for gpu in gpus.discover(None, None, proc, no_smi)] == ["GPU-aaaa"]
    asked: list[bool] = []

    def smi() -> str:
        asked.append(True)
        return "0, GPU-cccc, 0, 1024, Fake GPU\n"

    found = gpus.discover(None, None, tmp_path / "no-driver-proc", smi)
    assert (asked, [gpu.uuid for gpu in found]) == ([True], ["GPU-cccc"])
    assert gpus.discover(None, None, tmp_path / "no-driver-proc", lambda: None) == ()


def test_the_hosts_cuda_visible_devices_narrows_what_runs_may_use(tmp_path: Path) -> None:
    buses = enumerate([0x18, 0x38, 0x58, 0x78])
    proc = fake_proc(
        tmp_path / "gpus", *((f"0000:{bus:02x}:00.0", f"GPU-{bus:02x}aa", i) for i, bus in buses)
    )
    visible = {
        "2,0": [2, 0],  # its order is kept
        "GPU-58": [2],  # a unique UUID prefix will do, as for CUDA
        "1,-1,3": [1],  # CUDA stops at the first entry that names no GPU
        "": [],
        "-1": [],
    }
    for listing, indices in visible.items():
        found = gpus.discover(None, listing, proc, no_smi)
        assert [gpu.index for gpu in found] == indices, listing


def test_the_operators_setting_wins_over_cuda_visible_devices(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path / "gpus", ("0000:18:00.0", "GPU-aa", 0), ("0000:38:00.0", "GPU-bb", 1)
    )
    assert [gpu.index for gpu in gpus.discover("1", "0", proc, no_smi)] == [1]
    assert gpus.discover("none", "0,1", proc, no_smi) == ()
    with pytest.raises(ValueError, match=r"names a GPU the driver does not list.*0 \(GPU-aa\)"):
        gpus.discover("0,5", None, proc, no_smi)


def test_where_nothing_lists_gpus_the_operators_indices_are_taken_on_trust(tmp_path: Path) -> None:
    found = gpus.discover("0,1", None, tmp_path / "no-driver-proc", lambda: None)
    assert found == (Gpu(0, "", "", 0), Gpu(1, "", "", 1))
    assert [gpu.cuda_id for gpu in found] == ["0", "1"]  # no UUID to name them by


@pytest.fixture
def fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Put an nvidia-smi script of the test's making first on PATH."""

    def install(script: str) -> None:
        program = tmp_path / "bin" / "nvidia-smi"
        program.parent.mkdir(exist_ok=True)
        program.write_text("#!/bin/sh\n" + script)
        program.chmod(0o755)
        monkeypatch.setenv("PATH", f"{program.parent}:/usr/bin:/bin")

    return install


def test_nvidia_smi_is_asked_for_the_fields_discovery_reads(fake_nvidia_smi) -> None:  # type: ignore[no-untyped-def]
    fake_nvidia_smi('echo "$@"\n')
    asked = gpus.query_nvidia_smi()
    assert asked == (
        "--query-gpu=index,uuid,minor_number,memory.total,name --format=csv,noheader,nounits\n"
    )


def test_a_failing_or_hanging_nvidia_smi_counts_as_no_answer(fake_nvidia_smi) -> None:  # type: ignore[no-untyped-def]
    fake_nvidia_smi("echo 'NVIDIA-SMI has failed'; exit 9\n")
    assert gpus.query_nvidia_smi() is None
    fake_nvidia_smi("exec sleep 30\n")
    assert gpus.query_nvidia_smi(timeout_s=0.3) is None


def test_without_nvidia_smi_there_is_nothing_to_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert gpus.query_nvidia_smi() is None


# What a run on GPUs gets


def test_a_run_gets_the_control_nodes_and_its_own_gpus_nodes_only() -> None:
    host = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2"}
    assert gpus.device_paths([2, 0], exists=host.__contains__) == (
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",  # nvidia-uvm-tools is not on this host: left out
        "/dev/nvidia0",
        "/dev/nvidia2",
    )
    assert gpus.device_paths([], exists=host.__contains__) == ("/dev/nvidiactl", "/dev/nvidia-uvm")


def test_every_rank_sees_the_runs_gpus_in_rank_order_by_uuid() -> None:
    held = (inventory(4)[3], inventory(4)[1])  # the allocator's choice, rank order
    assert gpus.rank_environment(held) == {
        "CUDA_VISIBLE_DEVICES": "GPU-0003-uuid,GPU-0001-uuid",  # cuda:0 is rank 0's GPU 3
        "NCCL_SOCKET_IFNAME": "lo",
    }
    assert gpus.rank_environment(()) == {}  # a CPU run on a CPU host: nothing added
    # A CPU run on a GPU host sees no GPU, even where no sandbox hides the devices (trusted).
    assert gpus.rank_environment((), host_has_gpus=True) == {"CUDA_VISIBLE_DEVICES": ""}


def test_a_gpu_round_trips_through_json() -> None:
    gpu = Gpu(1, "GPU-bbbb", H100, minor=3, memory_bytes=80 * 1024**3)
    assert Gpu.from_dict(gpu.to_dict()) == gpu


# The allocator


def test_a_run_gets_distinct_free_gpus_at_once() -> None:
    async def scenario() -> None:
        allocator = GpuAllocator(inventory(4))
        first = await allocator.acquire(2)
        second = await allocator.acquire(2)
        assert [gpu.index for gpu in first + second] == [0, 1, 2, 3]
        assert allocator.free == 0
        allocator.release(first)
        assert await allocator.acquire(1) == (first[0],)

    asyncio.run(scenario())


def test_a_run_needing_more_gpus_than_the_host_has_is_refused_at_once() -> None:
    async def scenario() -> None:
        allocator = GpuAllocator(inventory(2))
        with pytest.raises(ValueError, match="3 GPUs wanted; this host has 2"):
            await allocator.acquire(3)
        assert (allocator.free, allocator.waiting) == (2, 0)
        assert await allocator.acquire(0) == ()

    asyncio.run(scenario())


def test_a_run_waits_until_enough_gpus_are_free() -> None:
    async def scenario() -> None:
        allocator = GpuAllocator(inventory(2))
        held = await allocator.acquire(2)
        waiting = asyncio.create_task(allocator.acquire(1))
        await asyncio.sleep(0.01)
        assert not waiting.done() and allocator.waiting == 1
        allocator.release(held[1:])
        assert await asyncio.wait_for(waiting, 1) == (held[1],)
        assert allocator.free == 0

    asyncio.run(scenario())


def test_gpus_go_out_in_order_of_arrival_without_overtaking() -> None:
    async def scenario() -> None:
        allocator = GpuAllocator(inventory(4))
        held = await allocator.acquire(3)  # one free
        order: list[str] = []

        async def run(name: str, count: int) -> tuple[Gpu, ...]:
            got = await allocator.acquire(count)
            order.append(name)
            return got

        big = asyncio.create_task(run("big", 2))
        await asyncio.sleep(0.01)
        small = asyncio.create_task(run("small", 1))
        await asyncio.sleep(0.01)
        # One GPU is free, enough for `small`, but `big` came first: no overtaking, so a run
        # wanting many GPUs cannot be starved by a stream of runs wanting one.
        assert (order, allocator.free) == ([], 1)
        allocator.release(held)
        got_big, got_small = await asyncio.wait_for(asyncio.gather(big, small), 1)
        assert order == ["big", "small"]
        assert len({*got_big, *got_small}) == 3 and allocator.free == 1

    asyncio.run(scenario())


def test_a_run_cancelled_while_waiting_leaves_the_line_and_lets_the_next_through() -> None:
    async def scenario() -> None:
        allocator = GpuAllocator(inventory(4))
        held = await allocator.acquire(3)
        big = asyncio.create_task(allocator.acquire(2))
        await asyncio.sleep(0.01)
        small = asyncio.create_task(allocator.acquire(1))
        await asyncio.sleep(0.01)
        big.cancel()  # the learner left
        assert len(await asyncio.wait_for(small, 1)) == 1  # no longer stuck behind `big`
        with pytest.raises(asyncio.CancelledError):
            await big
        allocator.release(held)
        assert (allocator.free, allocator.waiting) == (3, 0)

    asyncio.run(scenario())


@pytest.mark.parametrize("turns", [0, 1], ids=["before-the-hand-over", "after-the-hand-over"])
def test_gpus_handed_to_a_run_as_it_is_cancelled_are_not_lost(turns: int) -> None:
    async def scenario() -> None:
        allocator = GpuAllocator(inventory(2))
        held = await allocator.acquire(2)
        waiting = asyncio.create_task(allocator.acquire(2))
        await asyncio.sleep(0.01)
        allocator.release(held)  # handed over: scheduled on the loop...
        for _ in range(turns):
            await asyncio.sleep(0)  # ...and done, the waiter not yet resumed
        waiting.cancel()  # cancelled before it could take them
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.sleep(0.01)
        assert (allocator.free, allocator.waiting) == (2, 0)

    asyncio.run(scenario())


def test_gpus_released_from_another_thread_reach_a_waiting_loop() -> None:
    async def scenario() -> None:
        allocator = GpuAllocator(inventory(1))
        held = await allocator.acquire(1)
        waiting = asyncio.create_task(allocator.acquire(1))
        await asyncio.sleep(0.01)
        threading.Thread(target=allocator.release, args=(held,)).start()
        assert await asyncio.wait_for(waiting, 2) == held

    asyncio.run(scenario())


# The run path: the runner takes a slot, then the run's GPUs, and gives both back


class FakePool:
    """The seam below the runner: no zygote; records the GPUs each run was given."""

    def __init__(self, host_gpus: int) -> None:
        self.gpus = inventory(host_gpus)
        self.ready = True
        self.info = {"torch": "fake"}
        self.given: list[tuple[Gpu, ...]] = []
        self.go = asyncio.Event()  # runs whose code is "hold" wait for it

    def restart_if_dead(self) -> None:
        pass

    async def events(self, request: RunRequest, gpus: tuple[Gpu, ...] = ()):  # type: ignore[no-untyped-def]
        self.given.append(tuple(gpus))
        if request.code == "crash":
            raise ExecutorUnavailable("the warm process died")
        if request.code == "hold":
            await self.go.wait()
        yield {"event": "output", "rank": 0, "stream": "stdout", "text": "hi\n"}
        yield {"event": "result", "result": {"status": "ok", "duration_ms": 1, "ranks": []}}


def executor_on(pool: FakePool, slots: int = 2) -> Executor:
    settings = ExecutorSettings(max_concurrent_runs=slots, queue_limit=4)
    return Executor(settings, pool=pool)  # type: ignore[arg-type]


def gpu_run(code: str = "print(1)", nproc: int = 2, backend: str = "nccl") -> RunRequest:
    return RunRequest.model_validate(
        {"code": code, "nproc": nproc, "backend": backend, "use_cache": False}
    )


def held_by_nobody(executor: Executor) -> bool:
    return executor.capacity.active == 0 and executor.gpus.free == len(executor.gpus.gpus)


async def until(condition, timeout_s: float = 2.0) -> None:  # type: ignore[no-untyped-def]
    give_up = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < give_up, "timed out waiting"
        await asyncio.sleep(0.005)


def test_a_gpu_run_holds_its_slot_and_gpus_until_it_ends_then_the_next_gets_them() -> None:
    async def scenario() -> None:
        pool = FakePool(host_gpus=2)
        executor = executor_on(pool)
        first = asyncio.create_task(executor.run(gpu_run("hold")))
        await until(lambda: len(pool.given) == 1)
        second = asyncio.create_task(executor.run(gpu_run()))
        await until(lambda: executor.gpus.waiting == 1)
        # The second run holds the other slot while it waits for the GPUs the first holds.
        assert (executor.capacity.active, len(pool.given)) == (2, 1)
        pool.go.set()
        await asyncio.wait_for(asyncio.gather(first, second), 2)
        assert pool.given[0] == pool.given[1] == inventory(2)  # one GPU per rank, rank order
        assert held_by_nobody(executor)

    asyncio.run(scenario())


def test_only_runs_whose_backend_is_nccl_take_gpus() -> None:
    async def scenario() -> None:
        pool = FakePool(host_gpus=2)
        executor = executor_on(pool)
        await executor.run(gpu_run(backend="gloo"))
        await executor.run(gpu_run(backend="auto", nproc=4))  # no GPU per rank here: gloo
        await executor.run(gpu_run(backend="auto", nproc=2))  # a GPU per rank: NCCL
        assert pool.given == [(), (), inventory(2)]
        assert held_by_nobody(executor)

    asyncio.run(scenario())


def test_a_run_needing_more_gpus_than_the_host_has_is_refused_before_taking_a_slot() -> None:
    async def scenario() -> None:
        pool = FakePool(host_gpus=1)
        executor = executor_on(pool)
        with pytest.raises(LimitViolation, match=r"needs 2 GPUs .* this executor has 1"):
            await executor.open(gpu_run(nproc=2))
        assert pool.given == [] and held_by_nobody(executor)

    asyncio.run(scenario())


def test_slot_and_gpus_come_back_when_the_run_fails_inside_the_executor() -> None:
    async def scenario() -> None:
        executor = executor_on(FakePool(host_gpus=2))
        with pytest.raises(ExecutorUnavailable):
            await executor.run(gpu_run("crash"))
        assert held_by_nobody(executor)

    asyncio.run(scenario())


def test_slot_and_gpus_come_back_when_the_reader_stops_early() -> None:
    async def scenario() -> None:
        executor = executor_on(FakePool(host_gpus=2))
        stream = await executor.open(gpu_run())
        assert isinstance(await anext(stream), OutputEvent)
        assert executor.gpus.free == 0
        await stream.aclose()  # the learner pressed Stop
        assert held_by_nobody(executor)

    asyncio.run(scenario())


def test_slot_and_gpus_come_back_when_the_stream_is_dropped_unread() -> None:
    async def scenario() -> None:
        executor = executor_on(FakePool(host_gpus=2))
        stream = await executor.open(gpu_run())
        assert (executor.capacity.active, executor.gpus.free) == (1, 0)
        del stream  # never started: its `finally` cannot run
        gc.collect()
        assert held_by_nobody(executor)

    asyncio.run(scenario())


def test_a_run_cancelled_while_waiting_for_gpus_gives_its_slot_back() -> None:
    async def scenario() -> None:
        pool = FakePool(host_gpus=2)
        executor = executor_on(pool)
        first = asyncio.create_task(executor.run(gpu_run("hold")))
        await until(lambda: len(pool.given) == 1)
        waiting = asyncio.create_task(executor.open(gpu_run()))
        await until(lambda: executor.gpus.waiting == 1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (executor.capacity.active, executor.gpus.waiting) == (1, 0)
        pool.go.set()
        await first
        assert held_by_nobody(executor)

    asyncio.run(scenario())


# The warm parent never starts CUDA

# Every function of torch.cuda (and torch._C's CUDA entry points) records its calls; then the
# zygote's preload runs for real, warm-up fork included. Calls made inside the thrown-away
# warm-up fork stay in that fork's memory: only the parent's own calls are counted, which is
# the point (a parent that started CUDA could not fork ranks that use it). Functions imported by
# name into other modules before this patching would escape it.
RECORD_CUDA_CALLS = r"""
import json, types
import torch, torch.cuda
called = []
def recording(name, function):
    def wrapper(*args, **kwargs):
        called.append(name)
        return function(*args, **kwargs)
    return wrapper
patched = 0
for module, prefix in ((torch.cuda, "torch.cuda."), (torch._C, "torch._C.")):
    for name in dir(module):
        value = getattr(module, name)
        ours = isinstance(value, types.FunctionType) and value.__module__.startswith("torch.cuda")
        entry = module is torch._C and name.startswith("_cuda_") and callable(value)
        if ours or entry:
            setattr(module, name, recording(prefix + name, value))
            patched += 1
from executor import zygote
zygote._import_torch()  # as the warm parent starts (zygote.main), torch.compile's warm-up too
modules = zygote._warm(True, zygote._modules_to_warm({"warm": True, "warm_compile": True}))
print(json.dumps({"called": called, "patched": patched, "warmed": len(modules)}))
"""


# Asks only whether this torch was built with CUDA (hasattr(torch._C, "_cuda_getDeviceCount")),
# which starts nothing; torch._dynamo.device_interface asks at import.
STARTS_NOTHING = {"torch.cuda._is_compiled"}


@pytest.mark.executor
def test_the_warm_parent_never_calls_torch_cuda_while_preloading() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RECORD_CUDA_CALLS], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["patched"] > 50  # device_count, is_available, init, _lazy_init, _cuda_init...
    assert seen["warmed"] > 0  # the real warm-up ran: DDP's lazy imports were found
    assert [name for name in seen["called"] if name not in STARTS_NOTHING] == []


# A GPU run's ranks, for real, on a fake inventory: the operator names GPUs 0 and 1, which this
# machine does not have (nothing in the driver's /proc, no nvidia-smi to contradict it). No
# CUDA call is made; what is checked is what every rank gets before CUDA would start.
PROBE = """
import glob, json, os
shm = os.statvfs("/dev/shm")
print(json.dumps({
    "nodes": sorted(glob.glob("/dev/nvidia*")),
    "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "socket": os.environ.get("NCCL_SOCKET_IFNAME"),
    "async_errors": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    "shm_bytes": shm.f_blocks * shm.f_frsize,
    "pci": os.path.isdir("/sys/bus/pci"),
}))
"""
GPU_RANK_BYTES = 3 * 1024 * MIB
SMALL_SHM = 64 * MIB


@pytest.fixture(scope="module")
def two_fake_gpus() -> Iterator[Executor]:
    """A sandboxed executor told it has GPUs 0 and 1, with one sibling warm parent."""
    if gpus.parse_proc() or shutil.which("nvidia-smi"):
        pytest.skip("this machine has NVIDIA GPUs: the fake inventory would be checked")
    if glob.glob("/dev/nvidia*"):
        pytest.skip("this machine has NVIDIA device nodes: the fake ones would clash")
    limits = Limits(shm_bytes=SMALL_SHM, memory_bytes_per_gpu_rank=GPU_RANK_BYTES)
    settings = ExecutorSettings(gpus="0,1", warm=False, max_concurrent_runs=1, siblings=1,
                                limits=limits)  # fmt: skip
    runner = Executor(settings)
    try:
        _make_fake_device_nodes()
        runner.pool.start()
        if runner.info.get("sandbox_error"):
            pytest.skip(f"sandbox unavailable here: {runner.info['sandbox_error']}")
        yield runner
    finally:
        runner.close()
        for node in FAKE_NODES:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(node)


# Stand-ins for the driver's nodes (each a copy of /dev/null): a run may be handed only its own
# GPUs' and the control node, never GPU 2's, which no run holds, and a CPU run none at all.
FAKE_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2")


def _make_fake_device_nodes() -> None:
    try:
        for node in FAKE_NODES:
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating device nodes needs root")


def _slot_memory_limit(runner: Executor) -> int:
    zygote = runner.pool._process.pid  # type: ignore[union-attr]
    (memory, *_) = sandbox.slot_cgroup_parents(runner.settings.cgroup_root)
    slot = memory / f"slot-{zygote}-0"
    limit = slot / ("memory.max" if (slot / "memory.max").exists() else "memory.limit_in_bytes")
    return int(limit.read_text())


@pytest.mark.executor
def test_gpu_ranks_see_the_runs_gpus_nccl_settings_shm_and_memory(two_fake_gpus: Executor) -> None:
    assert two_fake_gpus.info["cuda_devices"] == 2
    result = asyncio.run(two_fake_gpus.run(gpu_run(PROBE)))
    assert result.status is RunStatus.OK, result
    assert result.environment is not None
    assert (result.environment.backend, result.environment.device) == ("nccl", "cuda")
    seen = [json.loads(rank.stdout) for rank in result.ranks]
    for rank in seen:  # rank 0 and rank 1 (one of them forked by the sibling warm parent)
        assert rank == {"nodes": ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"],
                        "visible": "0,1", "socket": "lo", "async_errors": "1",
                        "shm_bytes": 1024 * MIB, "pci": os.path.isdir("/sys/bus/pci")}  # fmt: skip
    assert _slot_memory_limit(two_fake_gpus) == Limits().memory_bytes_base + 2 * GPU_RANK_BYTES
    assert held_by_nobody(two_fake_gpus)


@pytest.mark.executor
def test_a_cpu_run_after_a_gpu_run_sees_no_gpu(two_fake_gpus: Executor) -> None:
    asyncio.run(two_fake_gpus.run(gpu_run(PROBE)))
    result = asyncio.run(two_fake_gpus.run(gpu_run(PROBE, backend="gloo")))
    assert result.status is RunStatus.OK, result
    # The GPU host's GPUs are hidden from a run that holds none (CUDA_VISIBLE_DEVICES empty).
    for rank in result.ranks:
        assert json.loads(rank.stdout) == {"nodes": [], "visible": "", "socket": None,
                                           "async_errors": "1",
                                           "shm_bytes": SMALL_SHM, "pci": False}  # fmt: skip
    limits = Limits()
    assert _slot_memory_limit(two_fake_gpus) == (
        limits.memory_bytes_base + 2 * limits.memory_bytes_per_rank
    )


@pytest.mark.executor
def test_health_reports_the_gpus_runs_may_use(two_fake_gpus: Executor) -> None:
    async def health() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=create_app(two_fake_gpus.settings, two_fake_gpus))
        async with httpx.AsyncClient(transport=transport, base_url="http://executor") as client:
            return (await client.get("/healthz")).json()  # type: ignore[no-any-return]

    seen = asyncio.run(health())
    assert seen["cuda_devices"] == 2  # what app/verification compares a snippet's needs with
    # No driver to name them here (the operator's word was taken): indices, no names.
    assert seen["gpus"] == [
        {"index": 0, "name": "", "memory_bytes": None},
        {"index": 1, "name": "", "memory_bytes": None},
    ]

"""The host's GPUs: found without CUDA, handed out whole (a GPU per rank), first come first served.

No torch here, on purpose: every rank is a fork of the warm zygote, and a process that has
initialised CUDA cannot fork a child that uses it (trap 11). So the GPUs are found from what the
NVIDIA driver publishes in /proc, or by asking `nvidia-smi` (a process of its own), never by
`torch.cuda`; the service does it once, before the zygote starts, and hands the list over.

A run that needs N GPUs waits for N free ones (NCCL refuses two ranks on one GPU), in order of
arrival; each of its ranks gets CUDA_VISIBLE_DEVICES naming the run's GPUs in rank order, so that
`cuda:LOCAL_RANK` is the rank's own GPU, as under torchrun on a machine with exactly those GPUs.
Everything here is unit-tested only: the machine it was written on has no GPU.
"""

from __future__ import annotations

import asyncio
import collections
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROC_GPUS = Path("/proc/driver/nvidia/gpus")
NVIDIA_SMI_QUERY = "index,uuid,minor_number,memory.total,name"  # name last: it may hold commas
NVIDIA_SMI_TIMEOUT_S = 10.0
# What every CUDA process opens, besides its GPUs' own /dev/nvidia<minor>.
CONTROL_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")


@dataclass(frozen=True)
class Gpu:
    """One GPU as the driver numbers it."""

    index: int  # nvidia-smi's index: PCI bus order
    uuid: str  # "GPU-…", or "" when only an operator's index is known
    name: str
    minor: int  # its device node is /dev/nvidia<minor> (usually equal to the index)
    memory_bytes: int | None = None

    @property
    def cuda_id(self) -> str:
        """How CUDA_VISIBLE_DEVICES names it: by UUID, which no enumeration order can change."""
        return self.uuid or str(self.index)

    def to_dict(self) -> dict[str, Any]:
        """The GPU as JSON (for the zygote's configuration, a run's order and health)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Gpu:
        """Read a GPU written by to_dict."""
        return cls(**data)


def parse_proc(root: Path = PROC_GPUS) -> list[Gpu]:
    """Read the driver's /proc/driver/nvidia/gpus/<PCI bus id>/information files."""
    try:
        buses = sorted(path for path in root.iterdir() if (path / "information").is_file())
    except OSError:
        return []
    found = []
    for index, bus in enumerate(buses):  # nvidia-smi numbers GPUs in PCI bus order too
        fields = {}
        for line in (bus / "information").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        minor = fields.get("Device Minor", "")
        found.append(
            Gpu(
                index=index,
                uuid=fields.get("GPU UUID", ""),
                name=fields.get("Model", ""),
                minor=int(minor) if minor.isdigit() else index,
            )
        )
    return found


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """Read `nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY> --format=csv,noheader,nounits` output."""
    found = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",", 4)]
        if len(parts) != 5 or not parts[0].isdigit():
            continue  # a warning line, or nothing
        index, uuid, minor, memory, name = parts
        found.append(
            Gpu(
                index=int(index),
                uuid=uuid,
                name=name,
                minor=int(minor) if minor.isdigit() else int(index),  # "[N/A]" on some hosts
                memory_bytes=int(memory) * 1024 * 1024 if memory.isdigit() else None,
            )
        )
    return found


def query_nvidia_smi(timeout_s: float = NVIDIA_SMI_TIMEOUT_S) -> str | None:
    """Ask nvidia-smi for the GPUs; None when it is missing, fails or hangs (a wedged driver)."""
    program = shutil.which("nvidia-smi")
    if program is None:
        return None
    command = [program, f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def discover(
    setting: str | None,
    visible: str | None,
    proc_root: Path = PROC_GPUS,
    nvidia_smi: Callable[[], str | None] = query_nvidia_smi,
) -> tuple[Gpu, ...]:
    """The GPUs runs may use on this host.

    `setting` is the operator's RANKLAB_EXECUTOR_GPUS: indices (or UUIDs) such as "0,1", or
    "none"; it wins. Otherwise every GPU found, narrowed by the host's CUDA_VISIBLE_DEVICES
    (`visible`) as it would be for any CUDA program there. Raises ValueError when the setting
    names a GPU that the driver does not list.
    """
    if setting is not None and setting.strip().lower() in {"", "none"}:
        return ()
    found = parse_proc(proc_root)
    if not found:
        output = nvidia_smi()
        found = parse_nvidia_smi(output) if output else []
    if setting is not None:
        return _named(found, setting)
    if visible is not None:
        return select(found, visible)
    return tuple(found)


def _named(found: list[Gpu], setting: str) -> tuple[Gpu, ...]:
    entries = [entry.strip() for entry in setting.split(",") if entry.strip()]
    if not found and all(entry.isdigit() for entry in entries):
        # Nothing to check against (no /proc entries, no nvidia-smi, as in some containers):
        # the operator's word is taken, and /dev/nvidia<index> is the node.
        return tuple(Gpu(int(entry), "", "", int(entry)) for entry in entries)
    chosen = select(found, setting)
    if len(chosen) != len(entries):
        known = ", ".join(f"{gpu.index} ({gpu.uuid})" for gpu in found) or "none"
        raise ValueError(f"RANKLAB_EXECUTOR_GPUS={setting!r} names a GPU the driver does not "
                         f"list; it lists: {known}")  # fmt: skip
    return chosen


def select(found: Sequence[Gpu], listing: str) -> tuple[Gpu, ...]:
    """The GPUs a CUDA_VISIBLE_DEVICES-style listing names, in its order.

    As CUDA reads it: indices or UUIDs (a unique prefix of one will do), and the list ends at
    the first entry that names no GPU ("-1" hides them all).
    """
    chosen: list[Gpu] = []
    for entry in (part.strip() for part in listing.split(",")):
        matches = [
            gpu
            for gpu in found
            if (entry.isdigit() and gpu.index == int(entry))
            or (entry.startswith("GPU-") and gpu.uuid.startswith(entry))
        ]
        if len(matches) != 1 or matches[0] in chosen:
            break
        chosen.append(matches[0])
    return tuple(chosen)


def device_paths(
    minors: Sequence[int], exists: Callable[[str], bool] = os.path.exists
) -> tuple[str, ...]:
    """The device nodes a run on these GPUs needs: the driver's control nodes and each GPU's
    own /dev/nvidia<minor>, no other GPU's; nodes the host lacks are left out."""
    wanted = [*CONTROL_DEVICES, *(f"/dev/nvidia{minor}" for minor in sorted(set(minors)))]
    return tuple(path for path in wanted if exists(path))


def rank_environment(gpus: Sequence[Gpu], host_has_gpus: bool = False) -> dict[str, str]:
    """What every rank of a run on `gpus` (rank order) gets before CUDA or NCCL start.

    A run holding no GPU on a host that has some sees none (an empty CUDA_VISIBLE_DEVICES):
    without the sandbox's device list (trusted mode) it would otherwise see every GPU, another
    run's included, and a key proven there could use CUDA it never declared.

    All the run's GPUs, in rank order, rather than one each: snippets pick their GPU as torchrun's
    do, `torch.cuda.set_device(LOCAL_RANK)` or `cuda:{LOCAL_RANK}`, which a rank seeing only its
    own GPU (as cuda:0) would fail for every rank but 0. Forgetting set_device still puts two
    ranks on one GPU, and NCCL still says so, as it would under torchrun. NCCL talks over the
    loopback, the only interface in the sandbox's network namespace.
    """
    if not gpus:
        return {"CUDA_VISIBLE_DEVICES": ""} if host_has_gpus else {}
    return {
        "CUDA_VISIBLE_DEVICES": ",".join(gpu.cuda_id for gpu in gpus),
        "NCCL_SOCKET_IFNAME": "lo",
    }


class GpuAllocator:
    """The host's GPUs handed out whole to runs, first come first served; any event loop.

    A run asking for N GPUs gets N distinct ones or waits. The line is strictly in order of
    arrival: a run waiting for 4 GPUs is not overtaken by later runs wanting 1, so it cannot
    starve. A run wanting more GPUs than the host has is refused at once.
    """

    def __init__(self, gpus: Sequence[Gpu]) -> None:
        self.gpus = tuple(gpus)
        self._free = sorted(self.gpus, key=lambda gpu: gpu.index)
        self._waiters: collections.deque[_Waiter] = collections.deque()
        self._lock = threading.Lock()

    @property
    def free(self) -> int:
        """How many GPUs no run holds now."""
        return len(self._free)

    @property
    def waiting(self) -> int:
        """How many runs wait for GPUs now."""
        return len(self._waiters)

    async def acquire(self, count: int) -> tuple[Gpu, ...]:
        """Take `count` GPUs, waiting in line for them; raise ValueError if there never will be."""
        if count > len(self.gpus):
            raise ValueError(f"{count} GPUs wanted; this host has {len(self.gpus)}")
        if count <= 0:
            return ()
        with self._lock:
            if not self._waiters and len(self._free) >= count:
                return self._take(count)
            waiter = _Waiter(count, asyncio.get_running_loop())
            self._waiters.append(waiter)
        try:
            return await waiter.future
        except asyncio.CancelledError:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                    self._dispatch()  # a big request leaving may let smaller ones through
            if waiter.future.done() and not waiter.future.cancelled():
                self.release(waiter.future.result())  # they reached us as we were cancelled
            raise

    def release(self, gpus: Sequence[Gpu]) -> None:
        """Give GPUs back; hand them to the runs at the head of the line that they satisfy."""
        if not gpus:
            return
        with self._lock:
            self._free = sorted([*self._free, *gpus], key=lambda gpu: gpu.index)
            self._dispatch()

    def _take(self, count: int) -> tuple[Gpu, ...]:
        taken, self._free = self._free[:count], self._free[count:]
        return tuple(taken)

    def _dispatch(self) -> None:
        # Called with the lock held.
        while self._waiters and len(self._free) >= self._waiters[0].count:
            waiter = self._waiters.popleft()
            if waiter.future.done():
                continue  # cancelled: its acquire() is leaving the line
            granted = self._take(waiter.count)
            waiter.loop.call_soon_threadsafe(self._hand_over, waiter.future, granted)

    def _hand_over(self, future: asyncio.Future[tuple[Gpu, ...]], gpus: tuple[Gpu, ...]) -> None:
        if future.done():  # cancelled before the GPUs arrived: pass them on
            self.release(gpus)
        else:
            future.set_result(gpus)


class _Waiter:
    def __init__(self, count: int, loop: asyncio.AbstractEventLoop) -> None:
        self.count = count
        self.loop = loop
        self.future: asyncio.Future[tuple[Gpu, ...]] = loop.create_future()

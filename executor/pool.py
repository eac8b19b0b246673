"""The service side of the warm pool: start the zygote, bound concurrency, stream run events."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Sequence
from typing import IO, Any

from executor import gpus as gpu_discovery
from executor.contract import ExecutorUnavailable, RunRequest
from executor.gpus import Gpu
from executor.settings import PACKAGE_PARENT, ExecutorSettings

# The zygote and every rank forked from it inherit this and nothing else: no secret from the
# service's own environment can be read from a rank's memory or /proc/self/environ.
ZYGOTE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/tmp",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
    "PYTHONPATH": str(PACKAGE_PARENT),
}
STREAM_LIMIT = 16 * 1024 * 1024
WATCHDOG_GRACE_S = 30.0


class QueueFull(RuntimeError):
    """Every slot is busy and the waiting line is full."""


class CapacityLimiter:
    """At most `slots` runs at once and `queue` waiting; usable from any event loop."""

    def __init__(self, slots: int, queue: int) -> None:
        self.slots, self.queue = slots, queue
        self.active = 0
        self._waiters: collections.deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]
        self._waiters = collections.deque()
        self._lock = threading.Lock()

    async def acquire(self) -> None:
        """Take a slot, waiting in line; raise QueueFull when the line is full."""
        with self._lock:
            if self.active < self.slots:
                self.active += 1
                return
            if len(self._waiters) >= self.queue:
                raise QueueFull(f"{self.active} runs active and {len(self._waiters)} waiting")
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))
            if future.done() and not future.cancelled():
                self.release()  # the slot reached us as we were cancelled: pass it on
            raise

    def release(self) -> None:
        """Hand the slot to the next waiter, or free it."""
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.popleft()
                if not future.done():
                    loop.call_soon_threadsafe(self._hand_over, future)
                    return
            self.active -= 1

    def _hand_over(self, future: asyncio.Future[None]) -> None:
        if future.done():  # cancelled before the slot arrived: pass it on
            self.release()
        else:
            future.set_result(None)


class WarmPool:
    """One zygote process holding torch; every run is a fork of it, reached over a unix socket."""

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings
        # Found here, in the service, never in the zygote (which must not start CUDA), and
        # before the scrubbed environment drops the host's CUDA_VISIBLE_DEVICES.
        self.gpus: tuple[Gpu, ...] = gpu_discovery.discover(
            settings.gpus, os.environ.get("CUDA_VISIBLE_DEVICES")
        )
        self.info: dict[str, Any] | None = None
        self._directory = tempfile.mkdtemp(prefix="ranklab-executor-")
        self._socket = os.path.join(self._directory, "zygote.sock")  # the service's way in
        # The warm parents reach the directory through this descriptor, never by its name: a
        # name they had read would stay in their heaps, and so in every rank forked from them
        # (a host path, readable through /proc/self/mem). A rank closes it (rank._redirect).
        self._directory_fd = os.open(self._directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self._inherited_directory = f"/proc/self/fd/{self._directory_fd}"
        self._process: subprocess.Popen[bytes] | None = None
        self._siblings: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._restart_lock = threading.Lock()
        self.started_once = False
        self.restarting = False

    @property
    def ready(self) -> bool:
        """Tell whether the zygote and its siblings are warm and alive."""
        alive = self._process is not None and self._process.poll() is None
        return (
            self.info is not None
            and alive
            and all(sibling.poll() is None for sibling in self._siblings)
        )

    def start(self) -> dict[str, Any]:
        """Start the zygote and its siblings (if not running); block until warm; return info."""
        with self._lock:
            if self.ready and self.info is not None:
                return self.info
            self._stop_process()
            for name in os.listdir(self._directory):
                os.unlink(os.path.join(self._directory, name))
            config = {
                "role": "main",
                "socket": f"{self._inherited_directory}/zygote.sock",
                "trusted": self.settings.trusted,
                "warm": self.settings.warm,
                "warm_compile": self.settings.warm_compile,
                "limits": self.settings.limits.model_dump(),
                "exposed": self.settings.exposed_paths,
                "cgroup_root": self.settings.cgroup_root,
                "slots": self.settings.max_concurrent_runs,
                "cpu_fairness": self.settings.cpu_fairness,
                "reseed": self.settings.reseed_after_fork,
                "sibling_dir": self._inherited_directory,
                "siblings": 0 if self.settings.trusted else self.settings.siblings,
                "gpus": [gpu.to_dict() for gpu in self.gpus],
            }
            process = self._spawn(config)
            self._process = process
            # The siblings start now, beside the main zygote: each imports torch while it does
            # (most of a warm parent's start), then waits on stdin for the modules to warm.
            pending = self._spawn_siblings(config, process.pid) if config["siblings"] else []
            line = _read_line(process.stdout, self.settings.startup_timeout_s)
            first = json.loads(line) if line else {}
            if first.get("event") == "modules":
                for sibling in pending:
                    _send_modules(sibling, first["modules"])
                line = _read_line(process.stdout, self.settings.startup_timeout_s)
            if not line:
                for sibling in pending:
                    _stop(sibling)
                self._stop_process()
                raise ExecutorUnavailable("the executor's warm process failed to start")
            info = json.loads(line)
            info.pop("modules", None)
            if info.get("sandbox_error"):
                for sibling in pending:
                    _stop(sibling)
            else:
                self._await_siblings(pending)
            info["siblings"] = len(self._siblings)
            self.info = info
            self.started_once = True
            return self.info

    def _spawn(self, config: dict[str, Any]) -> subprocess.Popen[bytes]:
        # Sandboxed, the zygote starts at neutral paths (/opt/ranklab/...): every module a rank
        # inherits then names no host directory (neutral_paths.py says how).
        module = "executor.zygote" if config["trusted"] else "executor.neutral_paths"
        command = [self.settings.python, "-m", module]
        # cwd=/ so that a relative path in the service never resolves inside the zygote. The
        # configuration goes through stdin: argv is readable by every process on the host. A
        # session of its own: the warm parents never hold the terminal the service was started
        # from (a rank forked from them could reach it), nor share its process group.
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=ZYGOTE_ENV,
            cwd="/",
            start_new_session=True,
            pass_fds=(self._directory_fd,),  # the socket directory, nameless (see __init__)
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(config).encode() + b"\n")
        process.stdin.flush()
        return process

    def _spawn_siblings(
        self, config: dict[str, Any], main_pid: int
    ) -> list[subprocess.Popen[bytes]]:
        """Start the extra warm parents that give ranks their own hash secret (siblings.py);
        each is handed the modules to warm later (_send_modules)."""
        sibling = {**config, "role": "sibling", "main_pid": main_pid, "modules": None}
        return [self._spawn({**sibling, "sibling": index}) for index in range(config["siblings"])]

    def _await_siblings(self, started: list[subprocess.Popen[bytes]]) -> None:
        """Keep the siblings that say they are ready; stop the others."""
        for process in started:
            if _read_line(process.stdout, self.settings.startup_timeout_s):
                self._siblings.append(process)
            else:
                _stop(process)

    def restart_if_dead(self) -> None:
        """Start a fresh zygote in the background if a running one has died."""
        # Not self._lock: start() holds that for seconds, and this runs on the event loop.
        with self._restart_lock:
            if not self.started_once or self.restarting or self.ready:
                return
            self.restarting = True
        threading.Thread(target=self._restart, daemon=True).start()

    def _restart(self) -> None:
        try:
            self.start()
        except ExecutorUnavailable:
            pass  # the next request or health check tries again
        finally:
            self.restarting = False

    async def start_async(self) -> dict[str, Any]:
        """Start the zygote without blocking the event loop."""
        return await asyncio.to_thread(self.start)

    async def events(
        self, request: RunRequest, gpus: Sequence[Gpu] = ()
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield the run's events (output..., then result) as the zygote reports them; the run
        uses `gpus` (held for it by the caller), in rank order."""
        if not self.ready:
            raise ExecutorUnavailable("the executor is starting")
        try:
            reader, writer = await asyncio.open_unix_connection(self._socket, limit=STREAM_LIMIT)
        except OSError as error:
            raise ExecutorUnavailable(f"cannot reach the warm process: {error}") from error
        # A reader task drains the socket into a queue, so a slow HTTP client can never stall
        # the slot worker (whose deadline must fire on time); output is capped, so is the queue.
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        reading = asyncio.create_task(_read_events(reader, queue))
        try:
            order = {**request.model_dump(mode="json"), "gpus": [gpu.to_dict() for gpu in gpus]}
            writer.write(json.dumps(order).encode() + b"\n")
            await writer.drain()
            # Watchdog: the slot worker enforces the deadline; this only catches a stuck executor.
            give_up = asyncio.get_running_loop().time() + request.timeout_s + WATCHDOG_GRACE_S
            while True:
                remaining = give_up - asyncio.get_running_loop().time()
                try:
                    event = await asyncio.wait_for(queue.get(), max(remaining, 0.001))
                except TimeoutError:
                    event = {"event": "result", "result": _lost_result("did not answer in time")}
                yield event
                if event.get("event") == "result":
                    return
        finally:
            reading.cancel()
            writer.close()

    def close(self) -> None:
        """Stop the zygote and remove its socket directory."""
        with self._lock:
            self._stop_process()
            shutil.rmtree(self._directory, ignore_errors=True)
            if self._directory_fd >= 0:
                os.close(self._directory_fd)
                self._directory_fd = -1

    def _stop_process(self) -> None:
        self.info = None
        # Siblings first: their workers sit in the main zygote's slot cgroups, which the main
        # zygote removes as it exits.
        siblings, self._siblings = self._siblings, []
        for sibling in siblings:
            _stop(sibling)
        process, self._process = self._process, None
        if process is not None:
            _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Close a zygote's stdin (it exits on EOF; in-flight runs finish), then reap it."""
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _send_modules(sibling: subprocess.Popen[bytes], modules: list[str]) -> None:
    """Tell a sibling which modules to warm (the main zygote's list), its second stdin line."""
    assert sibling.stdin is not None
    try:
        sibling.stdin.write(json.dumps({"modules": modules}).encode() + b"\n")
        sibling.stdin.flush()
    except OSError:
        pass  # it died: it never says it is ready, and _await_siblings stops it


def _read_line(stream: IO[bytes] | None, timeout: float) -> bytes:
    if stream is None:
        return b""
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else b""


async def _read_events(reader: asyncio.StreamReader, queue: asyncio.Queue[dict[str, Any]]) -> None:
    try:
        while line := await reader.readline():
            event = json.loads(line)
            queue.put_nowait(event)
            if event.get("event") == "result":
                return
    except (OSError, ValueError):
        pass
    queue.put_nowait({"event": "result", "result": _lost_result()})


def _lost_result(why: str = "ended without a result") -> dict[str, Any]:
    return {"status": "internal_error", "duration_ms": 0, "message": f"the run's slot worker {why}"}

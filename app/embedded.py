"""The embedded executor: started next to the app by `ranklab serve` and by `ranklab verify`.

The executor is its own process and HTTP service (it owns torch); the app only talks to it over
HTTP. If it cannot start, the app still serves challenges and pages say runs are unavailable.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import glob
import logging
import logging.config
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO, Any

import uvicorn

from app import obs, serving
from app.config import Settings
from app.executor_client import HttpExecutorClient
from app.main import create_app
from executor.ports import free_port

log = logging.getLogger("ranklab")

# What the executor may inherit: how to find Python and its own settings, never the app's
# secret key or database URL.
_PASSED_TO_EXECUTOR = ("PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR", "VIRTUAL_ENV")


class EmbeddedExecutorError(RuntimeError):
    """The embedded executor did not start, or something else answers where it should be."""


def executor_environment(
    slots: int | None = None, token: str | None = None, warm_compile: bool = False
) -> dict[str, str]:
    """The embedded executor's environment: no app secrets (RANKLAB_EXECUTOR_* settings pass)."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name in _PASSED_TO_EXECUTOR or name.startswith("RANKLAB_EXECUTOR_")
    }
    if slots is not None:
        # Runs executed at once (the executor's default is one per core).
        environment["RANKLAB_EXECUTOR_MAX_CONCURRENT_RUNS"] = str(slots)
    if token is not None:
        environment["RANKLAB_EXECUTOR_TOKEN"] = token
    if warm_compile:  # verify's: its torch.compile runs cost half (executor/settings.py)
        environment["RANKLAB_EXECUTOR_WARM_COMPILE"] = "1"
    return environment


def spawn_executor(
    host: str,
    port: int,
    trusted: bool = False,
    log: IO[bytes] | None = None,
    slots: int | None = None,
    token: str | None = None,
    log_level: str = "info",
    warm_compile: bool = False,
) -> subprocess.Popen[bytes]:
    """Start `ranklab executor serve` in its own process group (so it can be stopped whole).

    It dies with this process, however this process ends (even by SIGKILL): it asks the kernel
    for SIGTERM when its parent goes (PR_SET_PDEATHSIG), shuts down its warm pool and removes
    its cgroups. The kernel sends that signal when the *thread* that started it ends, so call
    this from a thread that lives as long as the executor should (the main thread).
    """
    command = [
        sys.executable,
        "-m",
        "app.cli",
        "executor",
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        "--parent-pid",
        str(os.getpid()),
        "--log-level",
        log_level,
    ]
    if trusted:
        command.append("--trusted")
    return subprocess.Popen(
        command,
        env=executor_environment(slots, token, warm_compile),
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT if log else None,
    )


def stop_executor(process: subprocess.Popen[bytes]) -> None:
    """Stop an executor and everything it started.

    SIGTERM goes to the executor alone: it shuts down gracefully, stopping its warm processes
    and removing their cgroups. Signalling its whole process group instead would kill the
    zygote before it can clean up. Whatever is left of the group afterwards is killed.
    """
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def wait_until_warm(
    process: subprocess.Popen[bytes],
    url: str,
    token: str | None,
    wait_s: float,
    log: IO[bytes] | None = None,
) -> None:
    """Block until the executor we started answers warm at `url`; raise a clear error if it
    exits, if it is not warm in time, or if what answers there refuses this start's token (an
    executor left over from an earlier start holds the port: never use it silently)."""
    client = HttpExecutorClient(url, token=token)
    deadline = time.monotonic() + wait_s
    while True:
        document = client.probe()
        if document is not None and token is not None and document.get("token") != "accepted":
            raise EmbeddedExecutorError(
                f"refusing the executor answering at {url}: it does not hold the token of this "
                "start, so it is not the one just started (a stale executor from an earlier "
                "start?). Stop it, or point RANKLAB_EXECUTOR_URL at it with its token."
            )
        if document is not None and document.get("status") == "ok":
            return
        if process.poll() is not None:
            tail = ""
            if log is not None:
                log.seek(0)
                tail = ":\n" + log.read().decode(errors="replace")[-2000:]
            raise EmbeddedExecutorError(f"the executor exited ({process.returncode}){tail}")
        if time.monotonic() > deadline:
            raise EmbeddedExecutorError(f"the executor was not warm after {wait_s:.0f} s")
        time.sleep(0.2)


@contextmanager
def temporary_executor(
    trusted: bool = False,
    wait_s: float = 180.0,
    slots: int | None = None,
    token: str | None = None,
    warm_compile: bool = False,
) -> Iterator[str]:
    """Run a private executor (`slots` runs at once, else one per core); yield its URL when warm.

    With a `token`, it accepts runs only with that token (and a stale executor on the port is
    refused); without one it inherits RANKLAB_EXECUTOR_TOKEN, if set.
    """
    with starting_executor(trusted, wait_s, slots, token, warm_compile) as starting:
        yield starting.ready()


class StartingExecutor:
    """A private executor on its way up: `ready()` blocks until it is warm, returns its URL."""

    def __init__(
        self, process: subprocess.Popen[bytes], url: str, token: str | None, wait_s: float,
        log: IO[bytes],
    ) -> None:  # fmt: skip
        self.process, self.url, self.token, self.wait_s, self.log = process, url, token, wait_s, log

    def ready(self) -> str:
        wait_until_warm(self.process, self.url, self.token, self.wait_s, self.log)
        return self.url


@contextmanager
def starting_executor(
    trusted: bool = False,
    wait_s: float = 180.0,
    slots: int | None = None,
    token: str | None = None,
    warm_compile: bool = False,
) -> Iterator[StartingExecutor]:
    """Start a private executor (as temporary_executor) without waiting for it to be warm, so
    the caller can do its own work meanwhile (verify loads the course: the executor's start
    is mostly CPU in other processes, importing torch)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # Its access log would drown the command's own output; kept to explain a failed start.
    with tempfile.TemporaryFile() as log:
        process = spawn_executor(
            "127.0.0.1", port, trusted, log, slots, token, warm_compile=warm_compile
        )
        try:
            yield StartingExecutor(process, url, token, wait_s, log)
        finally:
            stop_executor(process)


def serve(
    settings: Settings, host: str, port: int, with_executor: bool = True, workers: int = 1
) -> int:
    """Start the embedded executor (unless RANKLAB_EXECUTOR_URL names one, or RANKLAB_QUEUE_URL
    sends runs to agents), serve the app until interrupted, then stop the executor (it also
    dies on its own if this process is killed). `workers` > 1 serves from several processes."""
    if workers > 1:
        return _serve_workers(settings, host, port, with_executor, workers)
    with _stop_signals_held() as held:
        code = _serve_one(settings, host, port, with_executor, held)
    _end_by(held.numbers)
    return code


def _serve_one(
    settings: Settings, host: str, port: int, with_executor: bool, held: _HeldSignals
) -> int:
    executor = None
    if with_executor and not settings.executor_url and not settings.queue_url:
        # A free port and a token made for this start: the app can never talk to an executor
        # left from an earlier start, nor another local user run code through this one.
        token, executor_port = secrets.token_urlsafe(32), free_port()
        url = f"http://127.0.0.1:{executor_port}"
        # Warnings and errors only: its access lines would fill the terminal with the app's
        # /healthz probes while it starts (about 45 "503" lines); the app says when it is warm.
        executor = spawn_executor("127.0.0.1", executor_port, token=token, log_level="warning")
        settings = settings.model_copy(update={"executor_url": url, "executor_token": token})
        # Configured now (uvicorn configures the same again): the thread logs before it runs.
        logging.config.dictConfig(_logging(settings)["log_config"])
        threading.Thread(
            target=_report_start, args=(executor, url, token), name="executor-start", daemon=True
        ).start()
    try:
        app = create_app(settings)
        if held.numbers:  # stopped while the app was built: never start serving
            return 0
        # What is built by now lives as long as the process: freezing it keeps the garbage
        # collector's full collections (tens of ms each, pausing every request) from walking it.
        gc.collect()
        gc.freeze()
        # No access log unless asked for (RANKLAB_ACCESS_LOG): a line per request costs about
        # a tenth of a page's time under load; start-up, errors and warnings are still logged.
        _run_server(
            app,
            held,
            host=host,
            port=port,
            loop=serving.LOOP,
            log_level="info",
            **_logging(settings),
            **serving.proxy_options(settings.trusted_proxies),
        )
    finally:
        if executor is not None:
            stop_executor(executor)
    return 0


class _HeldSignals:
    """The stop signals that came while the app was being built (see _stop_signals_held)."""

    def __init__(self) -> None:
        self.numbers: list[int] = []
        self.building = True  # until the server's own handlers are in place

    def hold(self, number: int, _frame: FrameType | None) -> None:
        if self.building and self.numbers:
            raise KeyboardInterrupt  # a second one: the build may be stuck (uvicorn forces too)
        if number not in self.numbers:
            self.numbers.append(number)


@contextmanager
def _stop_signals_held() -> Iterator[_HeldSignals]:
    """Record SIGINT and SIGTERM while the app is built, instead of acting on them there.

    Python raises KeyboardInterrupt wherever the main thread is when SIGINT comes, and while
    the app is built that is often a weakref callback or a finalizer (SQLAlchemy's
    `_collection_gced`), where Python prints "Exception ignored" and goes on: the interrupt is
    lost and the app then serves until killed (a test's Ctrl-C after the executor was warm
    waited minutes for it). SIGTERM would end the process at once, leaving its executor. Here
    both are only recorded; the server acts on them once its own handlers are in place, and
    they end the process once the executor is stopped (_end_by).
    """
    held = _HeldSignals()
    if threading.current_thread() is not threading.main_thread():
        yield held  # signals reach the main thread only: nothing to hold here
        return
    stops = (signal.SIGINT, signal.SIGTERM)
    original = {stop: signal.signal(stop, held.hold) for stop in stops}
    try:
        yield held
    finally:
        for stop, handler in original.items():
            signal.signal(stop, handler)


def _end_by(numbers: list[int]) -> None:
    """End this process by the first stop signal it was sent, now that everything is stopped:
    its parent (a shell, make) sees what it sent, with no KeyboardInterrupt traceback."""
    if not numbers:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(numbers[0], signal.SIG_DFL)
    signal.raise_signal(numbers[0])


def _run_server(app: Any, held: _HeldSignals, **options: Any) -> None:
    """Serve `app` with uvicorn's options until a stop signal (held ones included)."""
    _Server(uvicorn.Config(app, **options), held).run()


class _Server(uvicorn.Server):
    """uvicorn's server, acting on the stop signals that came before its handlers did."""

    def __init__(self, config: uvicorn.Config, held: _HeldSignals) -> None:
        super().__init__(config)
        self._held = held

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn raises what it caught again as it leaves: held.hold records it.
        with super().capture_signals():
            self._held.building = False
            for number in self._held.numbers:
                self.handle_exit(number, None)
            yield


def _logging(settings: Settings) -> dict[str, Any]:
    """uvicorn's logging options: its own text lines, or JSON lines (app.obs) whose access
    lines, when asked for, come from the app (they carry the request id and duration)."""
    if settings.log_format == "json":
        return {"log_config": obs.json_log_config(), "access_log": False}
    # uvicorn's text lines, and the app's own ("ranklab": the executor starting, then warm)
    # through the same handler: without one, Python drops INFO lines.
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["loggers"]["ranklab"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return {"log_config": config, "access_log": settings.access_log}


def _serve_workers(
    settings: Settings, host: str, port: int, with_executor: bool, workers: int
) -> int:
    """Serve from `workers` processes, each building the app from the environment.

    The embedded executor is one process with a token made per start: workers cannot share it,
    so they need runs elsewhere (RANKLAB_QUEUE_URL or RANKLAB_EXECUTOR_URL) or none at all.
    """
    if with_executor and not settings.executor_url and not settings.queue_url:
        print(
            "ranklab serve: --workers needs RANKLAB_QUEUE_URL or RANKLAB_EXECUTOR_URL "
            "(the embedded executor serves one process), or --no-executor",
            file=sys.stderr,
        )
        return 2
    with _metrics_folder():
        uvicorn.run(
            "app.main:create_app",
            factory=True,
            workers=workers,
            loop=serving.LOOP,
            host=host,
            port=port,
            log_level="info",
            **_logging(settings),
            **serving.proxy_options(settings.trusted_proxies),
        )
    return 0


@contextmanager
def _metrics_folder() -> Iterator[None]:
    """An empty PROMETHEUS_MULTIPROC_DIR for the workers, so /metrics sums them all: the one
    named (emptied: files left by an earlier start would count again), else a temporary one."""
    named = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if named:
        os.makedirs(named, exist_ok=True)
        for leftover in glob.glob(os.path.join(named, "*.db")):
            os.remove(leftover)
        yield
        return
    with tempfile.TemporaryDirectory(prefix="ranklab-metrics-") as folder:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder  # the workers inherit it
        try:
            yield
        finally:
            del os.environ["PROMETHEUS_MULTIPROC_DIR"]


def _report_start(process: subprocess.Popen[bytes], url: str, token: str) -> None:
    # The app serves pages at once; runs say "unavailable" until the executor is warm.
    log.info("the embedded executor is starting; runs are unavailable until it is warm")
    try:
        wait_until_warm(process, url, token, wait_s=300)
    except EmbeddedExecutorError as error:
        log.error("runs are unavailable: %s", error)
    else:
        log.info("the embedded executor is warm at %s", url)

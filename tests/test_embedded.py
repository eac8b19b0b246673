"""The embedded executor's life is tied to the app's: stopping the app however it ends stops the
executor and everything it started, and a start never uses an executor it did not start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from app import embedded, migrations
from app.embedded import EmbeddedExecutorError, free_port, temporary_executor
from tests.support.waiting import wait_for

pytestmark = pytest.mark.executor
ROOT = Path(__file__).resolve().parents[1]


def _processes() -> dict[int, tuple[int, str]]:
    """Every process on the host: pid -> (parent pid, command line)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
            cmdline = Path("/proc", entry, "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        table[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline.decode())
    return table


def _descendants(pid: int) -> dict[int, str]:
    table = _processes()
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, cmdline) in table.items():
            if ppid == parent and child not in found:
                found[child] = cmdline
                frontier.append(child)
    return found


def _serve(tmp_path: Path, output: int | IO[bytes]) -> subprocess.Popen[bytes]:
    """Start `ranklab serve` as a newcomer starts it, on a migrated SQLite file."""
    database = f"sqlite:///{tmp_path / 'app.db'}"
    migrations.upgrade(database)
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RANKLAB_EXECUTOR") and name != "DATABASE_URL"
    }
    # A light executor: one slot, no warm-up, no sibling parents (the lifecycle is the same).
    environment |= {
        "DATABASE_URL": database,
        "RANKLAB_EXECUTOR_WARM": "false",
        "RANKLAB_EXECUTOR_SIBLINGS": "0",
        "RANKLAB_EXECUTOR_MAX_CONCURRENT_RUNS": "1",
    }
    command = [sys.executable, "-m", "app.cli", "serve", "--port", str(free_port())]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=environment,
        start_new_session=True,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    return process


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill what is left of a `serve` this test started (nothing, when it stopped as it should)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture
def app_process(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`ranklab serve` as a newcomer starts it, its output dropped."""
    process = _serve(tmp_path, subprocess.DEVNULL)
    yield process
    _kill_group(process)


def test_the_executor_starts_quietly_and_the_app_says_once_when_it_is_warm(tmp_path: Path):
    """`make run` printed a `GET /healthz 503` line for each of the app's probes while the
    executor started (about 45); now one line says it is starting, one that it is warm."""
    with (tmp_path / "serve.log").open("w+b") as output:
        process = _serve(tmp_path, output)
        try:
            wait_for(
                lambda: b"embedded executor is warm" in (tmp_path / "serve.log").read_bytes(),
                120,
                "the app to say the executor is warm",
            )
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            finally:
                _kill_group(process)  # a hung app must not outlive its test
    lines = (tmp_path / "serve.log").read_text().splitlines()
    assert [line for line in lines if "/healthz" in line] == []
    assert len([line for line in lines if "embedded executor is starting" in line]) == 1
    assert len([line for line in lines if "embedded executor is warm" in line]) == 1


@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda stop: stop.name
)
def test_stopping_the_app_stops_its_executor_and_everything_it_started(
    app_process: subprocess.Popen[bytes], stop: signal.Signals
) -> None:
    def warm_tree() -> dict[int, str]:
        tree = _descendants(app_process.pid)
        zygotes = [pid for pid, cmdline in tree.items() if "executor.zygote" in cmdline]
        # The zygote has forked its slot worker: the executor is fully up.
        return tree if zygotes and _descendants(zygotes[0]) else {}

    tree = wait_for(warm_tree, 120, "the embedded executor's zygote")
    assert any("executor serve" in cmdline for cmdline in tree.values())
    app_process.send_signal(stop)
    app_process.wait(timeout=30)
    wait_for(lambda: not (set(tree) & set(_processes())), 30, "the executor's processes to end")
    zygote = next(pid for pid, cmdline in tree.items() if "executor.zygote" in cmdline)
    leftovers = [
        path
        for controller in ("memory", "pids")
        for path in Path("/sys/fs/cgroup", controller, "ranklab").glob(f"slot-{zygote}-*")
    ]
    assert leftovers == []


class _InterruptedWhileCollected:
    """An object whose finalizer is where SIGINT lands, as it may while the app is built."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(10))  # Python code after the kill: the handler runs here, in the finalizer


def test_an_interrupt_inside_a_finalizer_is_lost_unless_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Python reports a KeyboardInterrupt raised in a finalizer as "Exception ignored" and goes
    # on: this is how a Ctrl-C while the app was built left it serving until killed.
    ignored: list[type[BaseException]] = []
    monkeypatch.setattr(
        sys, "unraisablehook", lambda unraisable: ignored.append(unraisable.exc_type)
    )
    _InterruptedWhileCollected()
    assert ignored == [KeyboardInterrupt]
    # Held, the interrupt is recorded instead, and the usual handler is back afterwards.
    with embedded._stop_signals_held() as held:
        _InterruptedWhileCollected()
    assert ignored == [KeyboardInterrupt]
    assert held.numbers == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_interrupt_while_held_interrupts_a_stuck_build() -> None:
    with pytest.raises(KeyboardInterrupt), embedded._stop_signals_held() as held:
        signal.raise_signal(signal.SIGINT)
        assert held.numbers == [signal.SIGINT]
        signal.raise_signal(signal.SIGINT)
        pytest.fail("the second interrupt did not interrupt")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=lambda stop: stop.name)
def test_a_stop_while_the_app_is_built_stops_it_and_its_executor(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """The signal comes as soon as the executor is starting, while the app is still being built
    (seconds: the course is loaded); the app must not go on to serve, and its executor stops."""
    log = tmp_path / "serve.log"
    with log.open("w+b") as output:
        process = _serve(tmp_path, output)
        try:
            wait_for(lambda: b"executor is starting" in log.read_bytes(), 60, "the start")
            tree = _descendants(process.pid)
            process.send_signal(stop)
            returncode = process.wait(timeout=30)
        finally:
            _kill_group(process)
    text = log.read_text()
    assert "Uvicorn running" not in text, text[-2000:]
    assert "Exception ignored" not in text, text[-2000:]
    assert "Traceback" not in text, text[-2000:]
    assert returncode == -stop  # ended by the signal it was sent: a shell or make sees that
    wait_for(lambda: not (set(tree) & set(_processes())), 30, "the executor's processes to end")


def test_a_start_refuses_an_executor_it_did_not_start(
    executor_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The free port was taken between choosing it and binding it, by an executor left running
    # from an earlier start: the new start must say so, never use that one silently.
    stale_port = int(executor_url.rsplit(":", 1)[1])
    monkeypatch.setattr(embedded, "free_port", lambda: stale_port)
    with (
        pytest.raises(EmbeddedExecutorError, match="not the one just started"),
        temporary_executor(token="this-start", wait_s=60),
    ):
        pass

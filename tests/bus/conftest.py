"""A throwaway Redis (the real redis-server, on a free port in a temporary folder) and real
`ranklab agent` processes on it, shared by the bus tests; for the tests of app processes on the
bus, a Redis database of their own, a scripted agent serving it and `ranklab serve` processes
that a test can kill.

Without redis-server the tests that need it are skipped with the reason; under CI=true they
fail instead (CI installs it with apt)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from app.bus_client import RedisExecutorClient
from executor import bus
from executor.ports import free_port
from tests.bus.scripted_agent import AgentThread, ScriptedRunner
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
RECLAIM_AFTER_S = 3.0  # small, so a killed agent's run is taken over quickly
AGENTS = 3
APPS_DB = 5  # the app tests' own Redis database: the session's real agents serve database 0


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A private redis-server in `folder`, with no persistence: its URL and its process."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is required in CI (apt-get install redis-server)")
        pytest.skip("redis-server not installed (apt-get install redis-server)")
    port = free_port()
    command = [
        binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
        "--save", "", "--appendonly", "no",
    ]  # fmt: skip
    with (folder / "redis.log").open("wb") as log:  # the child keeps its own copy
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"redis-server exited: {(folder / 'redis.log').read_text()}")
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    try:
        wait_for(answers, 20, "redis-server to answer")
        yield url, process
    finally:
        client.close()
        process.kill()  # SIGKILL: it may have been stopped (SIGSTOP) by the test
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private redis-server for the session."""
    with redis_server(tmp_path_factory.mktemp("redis")) as (url, _process):
        yield url


@pytest.fixture
def db(redis_url: str) -> Iterator[redis.Redis]:
    """A client that decodes replies, as every client of the bus does."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


class Fleet:
    """Real `ranklab agent` processes (trusted: these tests run only their own snippets; the
    bus, not the sandbox, is under test)."""

    def __init__(self, redis_url: str, logs: Path) -> None:
        self.redis_url = redis_url
        self.logs = logs
        self.agents: dict[str, subprocess.Popen[bytes]] = {}
        self.client = redis.Redis.from_url(redis_url, decode_responses=True)
        self.started = 0

    def spawn(self) -> str:
        """Start one more agent; return its name."""
        self.started += 1
        name = f"agent-{self.started}"
        environment = {
            **os.environ,
            "RANKLAB_EXECUTOR_SIBLINGS": "0",  # one warm parent each: 2 cores, 3 agents
            "RANKLAB_EXECUTOR_WARM": "false",
        }
        command = [
            sys.executable, "-m", "app.cli", "agent", "--queue", self.redis_url, "--pool", "cpu",
            "--slots", "1", "--trusted", "--name", name,
            "--reclaim-after", str(RECLAIM_AFTER_S),
        ]  # fmt: skip
        with (self.logs / f"{name}.log").open("wb") as log:
            self.agents[name] = subprocess.Popen(
                command,
                cwd=ROOT,
                env=environment,
                start_new_session=True,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return name

    def live(self) -> dict[str, dict[str, Any]]:
        """The agents with a fresh heartbeat."""
        return bus.live_agents(self.client.hgetall(bus.agents_key("cpu")), time.time())  # type: ignore[arg-type]

    def wait_ready(self, names: list[str]) -> None:
        """Block until every named agent beats and is warm (or fail with its log)."""

        def ready() -> bool:
            for name in names:
                if self.agents[name].poll() is not None:
                    log = (self.logs / f"{name}.log").read_text()
                    raise AssertionError(f"{name} exited:\n{log}")
            beats = self.live()
            return all(beats.get(name, {}).get("ready") for name in names)

        wait_for(ready, 90, f"agents {names} to be warm")

    def kill(self, name: str) -> None:
        """SIGKILL an agent and every process under it: a host dying mid-run. (Its process
        group is not enough: a trusted run's cell has a session of its own, and would finish
        the run orphaned.)"""
        process = self.agents.pop(name)
        tree = _descendants(process.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait()

    def stop(self, name: str) -> int:
        """SIGTERM an agent (graceful) and return its exit status."""
        process = self.agents.pop(name)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=30)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop every agent."""
        for name in list(self.agents):
            self.stop(name)
        self.client.close()


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` now, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path("/proc", entry, "stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found.extend(children)
        frontier.extend(children)
    return found


@pytest.fixture(scope="session")
def fleet(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Three warm agents serving the cpu pool, shared by the tests (a test that kills one
    starts its replacement)."""
    pytest.importorskip("torch")
    agents = Fleet(redis_url, tmp_path_factory.mktemp("agents"))
    try:
        names = [agents.spawn() for _ in range(AGENTS)]
        agents.wait_ready(names)
        yield agents
    finally:
        agents.close()


def result_events(client: redis.Redis, run_id: str) -> list[dict[str, Any]]:
    """The `result` entries of a run's output stream."""
    entries: Any = client.xrange(bus.events_key(run_id))
    return [json.loads(fields["data"]) for _id, fields in entries if fields["kind"] == "result"]


@pytest.fixture
def queue_url(redis_url: str) -> Iterator[str]:
    """The bus for tests of app processes, emptied before and after each."""
    url = f"{redis_url.rsplit('/', 1)[0]}/{APPS_DB}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def runner(queue_url: str) -> Iterator[ScriptedRunner]:
    """A scripted agent serving the bus while the test lasts."""
    played = ScriptedRunner()
    agent = AgentThread(queue_url, played)
    agent.start()
    wait_for(lambda: RedisExecutorClient(queue_url).health(), 10, "the agent's heartbeat")
    yield played
    agent.stop()


class Owner:
    """A real `ranklab serve` process on the same bus and database: an app that can die."""

    def __init__(self, url: str, process: subprocess.Popen[bytes]) -> None:
        self.url = url
        self.process = process

    def kill(self) -> None:
        """SIGKILL it: no shutdown, no last word to Redis or the database."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


@contextlib.contextmanager
def serve_process(sqlite_url: str, queue_url: str, content: Path, log: Path) -> Iterator[Owner]:
    """An app in a process of its own, serving until the block ends (or the test kills it)."""
    port = free_port()
    environment = {
        **os.environ,
        "DATABASE_URL": sqlite_url,
        "RANKLAB_QUEUE_URL": queue_url,
        "RANKLAB_CHALLENGES_DIR": str(content),
        "RANKLAB_SECRET_KEY": "test-secret",
        "RANKLAB_ENVIRONMENT": "test",
        "RANKLAB_CONTENT_GATE": "valid",  # test content has no proofs (as in make_settings)
    }
    command = [sys.executable, "-m", "app.cli", "serve", "--no-executor", "--port", str(port)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=environment, start_new_session=True, stdout=output, stderr=output
        )
    url = f"http://127.0.0.1:{port}"

    def serves() -> bool:
        if process.poll() is not None:
            raise AssertionError(log.read_text())
        try:
            return httpx.get(f"{url}/", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    served = Owner(url, process)
    try:
        wait_for(serves, 60, "ranklab serve to answer")
        yield served
    finally:
        served.kill()

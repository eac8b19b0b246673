"""A real `Agent` (pull, claim, cancel key, result) whose runner plays a script instead of
starting ranks, served from a thread of the test process: lab runs on the bus without torch.

The learner's code is the script, one command a line:

    say TEXT     every rank prints a line, TEXT ({rank} and {world} are filled in)
    put TEXT     the same without ending the line
    wait         hold until the test calls `release()`
    hang         hold until the run is stopped (cancelled), or the test ends
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aredis

from executor.agent import Agent, AgentSettings
from executor.bus import Pool
from executor.contract import (
    OutputEvent,
    RankResult,
    RankStatus,
    RunRequest,
    RunResult,
    RunStatus,
)

HOLD_POLL_S = 0.02


class ScriptedRunner:
    """Plays each run's script; counts the runs stopped part-way (their ranks "killed")."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.abandoned = threading.Event()  # the test is over: every held run ends
        self.killed = 0

    @property
    def ready(self) -> bool:
        return True

    @property
    def info(self) -> dict[str, Any]:
        return {"torch": "scripted"}  # sandboxed, as far as labs can tell

    def release(self) -> None:
        """Let every run waiting at `wait` go on."""
        self.released.set()

    async def open(self, request: RunRequest) -> AsyncIterator[OutputEvent | RunResult]:
        return self._play(request)

    async def _hold(self, until: threading.Event) -> None:
        while not (until.is_set() or self.abandoned.is_set()):
            await asyncio.sleep(HOLD_POLL_S)

    async def _play(self, request: RunRequest) -> AsyncIterator[OutputEvent | RunResult]:
        printed = {rank: "" for rank in range(request.nproc)}
        finished = False
        try:
            for line in request.code.splitlines():
                # A script may be written as Python comments ("# say 1.0"): a challenge's snippet
                # must compile for validate, and the agent plays it all the same.
                command, _, text = line.removeprefix("# ").partition(" ")
                if command in ("say", "put"):
                    for rank in printed:
                        chunk = text.format(rank=rank, world=request.nproc)
                        chunk += "\n" if command == "say" else ""
                        printed[rank] += chunk
                        yield OutputEvent(rank=rank, stream="stdout", text=chunk)
                elif command == "wait":
                    await self._hold(self.released)
                elif command == "hang":
                    await self._hold(threading.Event())
            ranks = [
                RankResult(rank=rank, status=RankStatus.OK, exit_code=0, stdout=text)
                for rank, text in printed.items()
            ]
            finished = True
            yield RunResult(status=RunStatus.OK, duration_ms=5, ranks=ranks)
        finally:
            if not finished:
                self.killed += 1


class AgentThread:
    """An agent serving a pool of `url` (cpu unless told) from its own thread and event loop."""

    def __init__(
        self, url: str, runner: ScriptedRunner, pool: Pool = "cpu", name: str = "scripted"
    ) -> None:
        self.url = url
        self.runner = runner
        self.pool: Pool = pool
        self.name = name
        self.started = threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping: asyncio.Event | None = None

    async def _serve(self) -> None:
        client = aredis.Redis.from_url(self.url, decode_responses=True)
        self.loop, self.stopping = asyncio.get_running_loop(), asyncio.Event()
        self.started.set()
        settings = AgentSettings(
            pool=self.pool, slots=4, name=self.name, heartbeat_s=0.5, block_s=0.2
        )
        try:
            await Agent(client, self.runner, settings).serve(self.stopping)
        finally:
            await client.aclose()

    def start(self) -> None:
        """Start serving."""
        self.thread.start()
        self.started.wait(10)

    def stop(self) -> None:
        """End every held run and leave (graceful: the agent finishes what it holds)."""
        self.runner.abandoned.set()
        if not self.thread.is_alive():  # stopped already (its loop is closed)
            return
        if self.loop is not None and self.stopping is not None:
            self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(30)

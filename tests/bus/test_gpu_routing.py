"""GPU work on the job bus: a run that needs GPUs goes to the GPU pool, and the app knows how many
GPUs its GPU agents hold, so verify says "needs N GPUs" only when no agent can serve the item.
Real Redis and real agents; their runners play scripts (no torch, no GPU)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from app.bus_client import RedisExecutorClient
from app.challenges.base import Launch
from app.runs.service import run_request
from app.verification.batch import executor_facts
from executor import bus
from executor.contract import OutputEvent, RunRequest, RunResult, RunStatus
from tests.bus.scripted_agent import AgentThread, ScriptedRunner
from tests.support.waiting import wait_for

SAY = "say rank {rank} of {world}"


class RecordingRunner(ScriptedRunner):
    """A scripted runner that keeps every request it ran and reports `gpus` GPUs."""

    def __init__(self, gpus: int) -> None:
        super().__init__()
        self.gpus = gpus
        self.requests: list[RunRequest] = []

    @property
    def info(self) -> dict[str, Any]:
        names = [{"index": n, "name": "Scripted GPU"} for n in range(self.gpus)]
        return {"torch": "scripted", "cuda_devices": self.gpus, "gpus": names}

    async def open(self, request: RunRequest) -> AsyncIterator[OutputEvent | RunResult]:
        self.requests.append(request)
        return await super().open(request)


@pytest.fixture
def hosts(queue_url: str) -> Iterator[tuple[RecordingRunner, RecordingRunner, AgentThread]]:
    """A CPU agent and a GPU agent with two GPUs, both beating."""
    cpu, gpu = RecordingRunner(0), RecordingRunner(2)
    agents = [
        AgentThread(queue_url, cpu, "cpu", "cpu-host"),
        AgentThread(queue_url, gpu, "gpu", "gpu-host"),
    ]
    for agent in agents:
        agent.start()
    client = RedisExecutorClient(queue_url)
    for pool in bus.POOLS:
        wait_for(lambda pool=pool: client.health(pool), 10, f"the {pool} agent's heartbeat")
    yield cpu, gpu, agents[1]
    for agent in agents:
        agent.stop()


def _request(**launch: Any) -> RunRequest:
    return run_request(SimpleNamespace(launch=Launch(**launch)), SAY, use_cache=False)


def test_runs_that_need_gpus_go_to_the_gpu_agent_and_the_rest_to_the_cpu_agent(
    queue_url: str, hosts: tuple[RecordingRunner, RecordingRunner, AgentThread]
) -> None:
    cpu, gpu, _ = hosts
    client = RedisExecutorClient(queue_url)
    declared = _request(nproc=1, launcher="python", backend="auto", gpus=2)  # one process, 2 GPUs
    nccl = _request(nproc=2, backend="nccl")
    plain = _request(nproc=2, backend="gloo")
    assert declared.gpus == 2  # the item's declaration reaches the executor

    for request in (declared, nccl, plain):
        assert client.run(request).status is RunStatus.OK

    assert [(r.backend, r.gpus) for r in gpu.requests] == [("auto", 2), ("nccl", 0)]
    assert [(r.backend, r.gpus) for r in cpu.requests] == [("gloo", 0)]


def test_the_app_counts_the_gpus_of_its_live_gpu_agents_for_verify(
    queue_url: str, hosts: tuple[RecordingRunner, RecordingRunner, AgentThread]
) -> None:
    client = RedisExecutorClient(queue_url)
    health = client.health()
    assert health is not None and health["cuda_devices"] == 2
    assert executor_facts(client).cuda_devices == 2  # a gpus: 2 item is verified, not skipped

    _, _, gpu_agent = hosts
    gpu_agent.stop()  # the GPU host leaves: its heartbeat goes with it
    wait_for(lambda: client.health() is not None and client.health()["cuda_devices"] == 0, 10,
             "the GPU agent's heartbeat to go")  # fmt: skip
    assert executor_facts(client).cuda_devices == 0  # now verify says "needs 2 GPUs"

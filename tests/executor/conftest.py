"""One warm, sandboxed executor for the whole test session (starting one costs seconds)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from executor.contract import RunRequest, RunResult
from executor.runner import Executor
from executor.settings import ExecutorSettings

# Put a secret in the environment the executor is started from: no rank may ever see it.
CANARY = "ranklab-canary-7f3c9e"
os.environ.setdefault("RANKLAB_TEST_SECRET", CANARY)


@pytest.fixture(scope="session")
def secret_dir() -> Iterator[Path]:
    """A world-readable directory holding the canary: only the sandbox's mounts can hide it."""
    directory = Path(tempfile.mkdtemp(prefix="ranklab-secrets-", dir="/var/tmp"))
    directory.chmod(0o755)
    (directory / "secret.txt").write_text(CANARY)
    (directory / "secret.txt").chmod(0o644)
    yield directory
    shutil.rmtree(directory)


@pytest.fixture(scope="session")
def executor(secret_dir: Path) -> Iterator[Executor]:
    """Start the sandboxed warm pool once per session."""
    pytest.importorskip("torch")
    defaults = ExecutorSettings()
    settings = ExecutorSettings(
        max_concurrent_runs=2,
        queue_limit=8,
        hidden_paths=[*defaults.hidden_paths, str(secret_dir)],
    )
    runner = Executor(settings)
    runner.pool.start()
    problem = runner.info.get("sandbox_error")
    if problem:
        # Where this machine cannot sandbox (not root, no cgroup v1), the product refuses
        # untrusted code (tested in test_sandbox); run semantics are still tested, trusted.
        runner.close()
        runner = Executor(settings.model_copy(update={"trusted": True}))
        runner.pool.start()
        runner.pool.info = {**(runner.pool.info or {}), "sandbox_error": problem}
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def sandboxed(executor: Executor) -> Executor:
    """The warm executor, or a skip where this machine cannot sandbox (not root, no cgroups)."""
    problem = executor.info.get("sandbox_error")
    if problem:
        pytest.skip(f"sandbox unavailable here: {problem}")
    return executor


def run(runner: Executor, code: str, nproc: int = 2, timeout_s: float = 10.0) -> RunResult:
    """Run code for real (never from the cache) and return the result."""
    request = RunRequest(code=code, nproc=nproc, timeout_s=timeout_s, use_cache=False)
    return asyncio.run(runner.run(request))

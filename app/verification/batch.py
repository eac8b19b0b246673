"""Verify many items at once through the executor's slots, handing results back in item order."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

from app.challenges.loader import LoadedSet
from app.challenges.schema import ItemBase
from app.executor_client import ExecutorClient
from app.verification import evidence
from app.verification import service as verification
from app.verification.proofs import ProofRun
from app.verification.rules import ItemReport


@dataclass(frozen=True)
class Verified:
    """One item's report, how long verifying it took, and the content it was verified for."""

    loaded: LoadedSet
    item: ItemBase
    report: ItemReport
    duration_ms: int

    @cached_property
    def content_hash(self) -> str:
        """The hash of the item's content as it was verified."""
        return evidence.item_hash(self.loaded, self.item)


@dataclass(frozen=True)
class VerifiedProof:
    """One proof's report and how long verifying it took."""

    run: ProofRun
    report: ItemReport
    duration_ms: int


@dataclass(frozen=True)
class ExecutorFacts:
    """What verification needs to know about the executor before it runs anything."""

    cuda_devices: int = 0
    max_timeout_s: float = verification.DEFAULT_MAX_TIMEOUT_S


def executor_facts(client: ExecutorClient) -> ExecutorFacts:
    """Ask the executor for its CUDA devices and longest allowed run (defaults when it is down)."""
    health = client.health() or {}
    return ExecutorFacts(
        int(health.get("cuda_devices") or 0),
        float(health.get("max_timeout_s") or verification.DEFAULT_MAX_TIMEOUT_S),
    )


def verify_timed(
    client: ExecutorClient,
    loaded: LoadedSet,
    item: ItemBase,
    repeats: int,
    facts: ExecutorFacts,
    shared: verification.SharedRuns | None = None,
) -> Verified:
    """Verify one item, measuring the wall time it took."""
    started = time.monotonic()
    report = verification.verify_item(
        client, loaded, item, repeats, facts.cuda_devices, facts.max_timeout_s, shared
    )
    return Verified(loaded, item, report, round((time.monotonic() - started) * 1000))


def verify_proof_timed(
    client: ExecutorClient,
    run: ProofRun,
    repeats: int,
    facts: ExecutorFacts,
    shared: verification.SharedRuns | None = None,
) -> VerifiedProof:
    """Verify one proof, measuring the wall time it took."""
    started = time.monotonic()
    report = verification.verify_proof(
        client, run.label, run.proof, run.code, repeats, facts.cuda_devices,
        facts.max_timeout_s, shared,
    )  # fmt: skip
    return VerifiedProof(run, report, round((time.monotonic() - started) * 1000))


def verify_in_order(
    client: ExecutorClient, sets: Sequence[LoadedSet], repeats: int, jobs: int = 1
) -> Iterator[Verified]:
    """Verify every item of every set, `jobs` at a time, yielding results in item order."""
    facts = executor_facts(client)
    work = [(loaded, item) for loaded in sets for item in loaded.challenge_set.items]
    return _in_order(
        lambda pair: verify_timed(client, pair[0], pair[1], repeats, facts), work, jobs
    )


def verify_proofs_in_order(
    client: ExecutorClient, runs: Sequence[ProofRun], repeats: int, jobs: int = 1
) -> Iterator[VerifiedProof]:
    """Verify every proof, `jobs` at a time, yielding results in the given order."""
    facts = executor_facts(client)
    return _in_order(lambda run: verify_proof_timed(client, run, repeats, facts), runs, jobs)


Work = TypeVar("Work")
Done = TypeVar("Done")


def _in_order(
    verify_one: Callable[[Work], Done], work: Sequence[Work], jobs: int
) -> Iterator[Done]:
    """Apply verify_one to each piece of work, `jobs` at a time, yielding results in order."""
    if jobs <= 1:
        for piece in work:
            yield verify_one(piece)
        return
    # The HTTP client opens a connection per call, so threads may share it.
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="verify")
    try:
        futures: list[Future[Done]] = [pool.submit(verify_one, piece) for piece in work]
        for future in futures:
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

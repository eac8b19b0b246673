"""Run every executable item on an executor and judge its key (`ranklab verify`, the staff view)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, cast

from app import metrics
from app.challenges.loader import LoadedSet
from app.challenges.schema import InlineProof, ItemBase, proven_by_run
from app.executor_client import ExecutorClient, ExecutorUnavailable
from app.runs.service import Launched, gpus_needed, run_request
from app.verification import infra
from app.verification.hangs import proven_hang
from app.verification.rules import (
    ItemReport,
    Observation,
    Verdict,
    claims_hang,
    judge,
    judge_proof,
)
from executor.contract import OutputEvent, RankResult, RankStatus, RunResult, RunStatus
from executor.hangstop import refusing_word

# A time-out is re-run with a much longer limit before it counts as a hang: a slow rank that
# finishes is not a deadlock.
LONG_LIMIT_FACTOR = 4
LONG_LIMIT_MIN_S = 30.0
DEFAULT_MAX_TIMEOUT_S = 60.0
# A rank that drew unseeded random numbers gets this many more runs before fixed output is
# believed: three runs can agree by chance (a coin flip printed as 0 or 1).
EXTRA_RUNS_FOR_RANDOMNESS = 5
# Tries of one run that the executor spoiled (a rank lost at rendezvous) before verify gives up
# on the item: under load about 1 run in 40 failed so before the store fix.
EXECUTOR_FAULT_TRIES = 3
# The gap between ranks' starts (and first prints) in a perturbed run: far more than the skew
# of ranks leaving a collective together, even on 2 loaded cores.
PERTURB_STEP_S = 0.1


class ExecutorFault(ExecutorUnavailable):
    """The executor spoiled every try of a run: nothing may be concluded about the snippet."""


def schedule(run: int, nproc: int) -> list[float]:
    """The start delays of run number `run` (from 0) of an nproc-rank snippet.

    Run 0 runs as it comes. In run k another rank goes first, (nproc - k) mod nproc, and the
    others follow PERTURB_STEP_S apart: over three runs of two ranks, each rank is first at
    least once. Scheduling cannot reorder what the snippet itself orders (a rank printing
    after a collective its peer enters later), so a true claim is unaffected, while a claim
    that holds only by a lucky order shows false on every verify."""
    if run == 0 or nproc < 2:
        return []
    first = (nproc - run) % nproc
    return [((rank - first) % nproc) * PERTURB_STEP_S for rank in range(nproc)]


def observe(
    client: ExecutorClient,
    code: str,
    item: Any,
    timeout_s: float | None = None,
    run: int = 0,
    stop_when_stuck: bool = False,
) -> Observation:
    """Run a snippet once, uncached, perturbed as run number `run` (schedule); a run the
    executor spoiled (infra.executor_fault) is run again, up to EXECUTOR_FAULT_TRIES times,
    and never returned. `stop_when_stuck`: the executor may end a run it proves hung before
    its limit (RunRequest.stop_when_stuck)."""
    faults: list[str] = []
    for _ in range(EXECUTOR_FAULT_TRIES):
        observation = _observe_once(client, code, item, timeout_s, run, stop_when_stuck)
        fault = infra.executor_fault(observation.result)
        if fault is None:
            return observation
        faults.append(fault)
    raise ExecutorFault(
        f"the executor failed {len(faults)} tries of this run, so nothing is concluded about "
        f"the snippet: {faults[-1]}"
    )


def _observe_once(
    client: ExecutorClient,
    code: str,
    item: Any,
    timeout_s: float | None,
    run: int,
    stop_when_stuck: bool = False,
) -> Observation:
    """Run a snippet once, uncached, noting which rank printed first, second, …"""
    request = run_request(item, code, timeout_s=timeout_s, use_cache=False)
    if stop_when_stuck:
        request = request.model_copy(update={"stop_when_stuck": True})
    if request.launcher == "torchrun":
        request = request.model_copy(update={"rank_delays_s": schedule(run, request.nproc)})
    order: list[int] = []
    result: RunResult | None = None
    for event in client.stream(request):
        if isinstance(event, OutputEvent):
            if event.stream == "stdout" and event.rank not in order:
                order.append(event.rank)
        else:
            result = event
    if result is None:
        raise ExecutorUnavailable("the executor's stream ended without a result")
    metrics.count_run("verify", result.status.value)
    return Observation(result, tuple(order))


def long_limit(timeout_s: float, max_timeout_s: float) -> float:
    """The limit of the re-run that tells a hang from a slow rank."""
    return min(max(LONG_LIMIT_FACTOR * timeout_s, LONG_LIMIT_MIN_S), max_timeout_s)


def _output_varied(observations: list[Observation]) -> bool:
    outputs = {tuple(rank.stdout for rank in o.result.ranks) for o in observations}
    return len(outputs) > 1


def _drew_unseeded(observations: list[Observation]) -> bool:
    return any(rank.unseeded_random for o in observations for rank in o.result.ranks)


def verify_item(
    client: ExecutorClient,
    loaded: LoadedSet,
    item: ItemBase,
    repeats: int,
    cuda_devices: int,
    max_timeout_s: float = DEFAULT_MAX_TIMEOUT_S,
    shared: SharedRuns | None = None,
) -> ItemReport:
    """Verify one item: run it `repeats` times, prove any hang, probe randomness, run the fix
    (the runs of its snippet shared with other claims about the same request, if `shared`)."""
    if not proven_by_run(item):
        return ItemReport(item.id, Verdict.NOT_EXECUTABLE)
    needed = gpus_needed(cast(Launched, item))  # every item proven by a run has `launch:`
    if needed > cuda_devices:
        return ItemReport(
            item.id,
            Verdict.NEEDS_GPUS,
            notes=[f"needs {needed} GPU(s); this executor has {cuda_devices}"],
        )
    try:
        observations = _observe_runs(
            client, loaded.code[item.id], loaded.fixed_code.get(item.id), item, repeats,
            max_timeout_s, shared,
        )  # fmt: skip
    except _Unavailable as error:
        return _executor_failed(item.id, error)
    report = judge(item, observations)
    _note_no_early_stop(report, item, loaded.code[item.id])
    return report


def verify_proof(
    client: ExecutorClient,
    proof_id: str,
    proof: InlineProof,
    code: str,
    repeats: int,
    cuda_devices: int,
    max_timeout_s: float = DEFAULT_MAX_TIMEOUT_S,
    shared: SharedRuns | None = None,
) -> ItemReport:
    """Verify a proof as a key is verified: the same runs, hang proof and randomness probe."""
    needed = gpus_needed(proof)
    if needed > cuda_devices:
        return ItemReport(
            proof_id,
            Verdict.NEEDS_GPUS,
            notes=[f"needs {needed} GPU(s); this executor has {cuda_devices}"],
        )
    try:
        observations = _observe_runs(client, code, None, proof, repeats, max_timeout_s, shared)
    except _Unavailable as error:
        return _executor_failed(proof_id, error)
    report = judge_proof(proof_id, proof.outcome, observations)
    _note_no_early_stop(report, proof, code)
    return report


def _note_no_early_stop(report: ItemReport, claimant: Any, code: str) -> None:
    """Tell the author why a hang claim's run waited out its whole limit, when the executor
    declined to stop it early for a word of the snippet's (executor/hangstop.py)."""
    word = refusing_word(code)
    waited = any(
        o.result.status is RunStatus.TIMEOUT and not o.result.stopped_when_stuck
        for o in report.observations
    )
    if word and waited and claims_hang(claimant):
        report.notes.append(
            f"the run waited out its limit: the executor never stops early a snippet that says "
            f"{word!r} (it may end a wait by itself); keep launch.timeout_s small"
        )


def _executor_failed(report_id: str, error: _Unavailable) -> ItemReport:
    """The executor's failure, not the snippet's: no run is shown as what the snippet does, and
    the verdict is not recorded as a proof (see ItemReport.executor_failed)."""
    return ItemReport(report_id, Verdict.FAIL, problems=[str(error.cause)], executor_failed=True)


class _Unavailable(Exception):
    """The executor went away mid-way: the cause and what was observed before."""

    def __init__(self, cause: ExecutorUnavailable, observations: list[Observation]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.observations = observations


def _observe_runs(
    client: ExecutorClient,
    code: str,
    fixed: str | None,
    item: Any,
    repeats: int,
    max_timeout_s: float,
    shared: SharedRuns | None = None,
) -> list[Observation]:
    """Run an item's (or a proof's) snippet `repeats` times, prove any hang with a longer
    limit, probe randomness with more runs (once per verify for the same request, when
    `shared`), then run the fixed code (if any)."""
    observations: list[Observation] = []
    try:
        if shared is None:
            observations = _observe_snippet(client, code, item, repeats, max_timeout_s)
        else:
            observations = _shared_runs(shared, client, code, item, repeats, max_timeout_s)
        if fixed is not None and shared is not None:
            # A fix is often a proof's snippet too (the fix a card recommends): shared as well.
            fixed_runs = _shared_runs(shared, client, fixed, item, repeats, max_timeout_s)
            observations += [dataclasses.replace(run, fixed=True) for run in fixed_runs]
        elif fixed is not None:
            for number in range(repeats):
                fixed_run = observe(client, fixed, item, run=number)
                observations.append(dataclasses.replace(fixed_run, fixed=True))
                if fixed_run.result.status is not RunStatus.OK:
                    break
    except ExecutorUnavailable as error:
        raise _Unavailable(error, observations) from error
    return observations


def _shared_runs(
    shared: SharedRuns,
    client: ExecutorClient,
    code: str,
    item: Any,
    repeats: int,
    max_timeout_s: float,
) -> list[Observation]:
    """_observe_snippet's runs of this request, made once per verify (SharedRuns)."""
    request = run_request(item, code, use_cache=False)
    if claims_hang(item):  # the runs a hang claim makes may end early (_observe_snippet)
        request = request.model_copy(update={"stop_when_stuck": True})
    key = (request.model_dump_json(), repeats)
    return list(
        shared.runs(key, lambda: _observe_snippet(client, code, item, repeats, max_timeout_s))
    )


def _observe_snippet(
    client: ExecutorClient, code: str, item: Any, repeats: int, max_timeout_s: float
) -> list[Observation]:
    """Run a snippet `repeats` times (perturbed: schedule), prove any hang from the stacks or
    with a longer limit, and probe randomness with more runs.

    A claim that the snippet hangs has its first run wait out the whole limit, so what the
    ranks do within it is seen, not inferred: a wait can end by itself in ways no reading of
    the code rules out (a group timeout passed by position and built without the word, a
    sleep inside an object a collective unpickles). Its other perturbed runs let the executor
    end a run it proves hung before the limit (hangstop.py), a second or two each. Any other
    run that takes its whole limit is the last, as for any other claim."""
    hang_claim = claims_hang(item)
    watched = hang_claim and refusing_word(code) is None  # the executor may stop runs early
    observations: list[Observation] = []
    for number in range(repeats):
        early = hang_claim and number > 0
        observation = observe(client, code, item, run=number, stop_when_stuck=early)
        # Every rank waits for a peer and none works: a deadlock, proven from its stacks in
        # the run itself, without the re-run at a much longer limit.
        proof = proven_hang(observation.result)
        observations.append(dataclasses.replace(observation, hang_proof=proof))
        timed_out = observation.result.status is RunStatus.TIMEOUT
        first_of_watched = watched and number == 0 and proof is not None
        if timed_out and not observation.result.stopped_when_stuck and not first_of_watched:
            break  # a time-out takes the whole limit: prove it once, with a longer one
    unproven = [
        o for o in observations if o.result.status is RunStatus.TIMEOUT and o.hang_proof is None
    ]
    if unproven:
        longer = long_limit(item.launch.timeout_s, max_timeout_s)
        rerun = observe(client, code, item, timeout_s=longer)
        observations.append(dataclasses.replace(rerun, long_limit=True))
    elif _drew_unseeded(observations):
        for _ in range(EXTRA_RUNS_FOR_RANDOMNESS):
            if _output_varied(observations):
                break
            observations.append(observe(client, code, item, run=len(observations)))
    return observations


class SharedRuns:
    """The runs of one verify, shared by the claims about the same request.

    Most proofs of cards and cheat sheets run exactly an item's snippet with its launch (92 of
    the course's 124): each claim is still judged on all the runs verify makes of that request,
    perturbed orders included, so running them again only repeated the same evidence. A claim
    true by luck meets the perturbed runs either way; nothing is shared between two verifies, so
    each verify observes afresh. Thread-safe: a second claim about a request being run waits for
    those runs; if they fail (the executor), it runs them itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observed: dict[tuple[str, int], Future[list[Observation]]] = {}

    def runs(
        self, key: tuple[str, int], observe_all: Callable[[], list[Observation]]
    ) -> list[Observation]:
        """The observations of the request `key` names: made now, or by an earlier claim."""
        with self._lock:
            pending = self._observed.get(key)
            if pending is None:
                mine: Future[list[Observation]] = Future()
                self._observed[key] = mine
        if pending is not None:
            try:
                return pending.result()
            except ExecutorUnavailable:
                return observe_all()  # the first claim's runs were spoiled: run them here
        try:
            observed = observe_all()
        except BaseException as error:
            with self._lock:
                del self._observed[key]
            mine.set_exception(error)
            raise
        mine.set_result(observed)
        return observed


def describe_rank(rank: RankResult) -> str:
    """One rank's observed result, for evidence in reports."""
    parts = [f"rank {rank.rank}: {rank.status.value}"]
    if rank.exit_code not in (0, None) or rank.status is not RankStatus.OK:
        parts.append(f"exit {rank.exit_code}")
    if rank.exception is not None:
        parts.append(f"{rank.exception.type}: {rank.exception.message.splitlines()[0][:200]}")
    if rank.stuck is not None:
        parts.append(f"stuck at {rank.stuck.describe()}")
    if rank.stdout:
        parts.append(f"stdout {rank.stdout!r}")
    return ", ".join(parts)

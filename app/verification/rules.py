"""Prove keys against observed runs: pure matching of Outcome expectations to RunResults.

Pure: the standard library, pydantic, the challenge schema and the executor's contract models.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from app.challenges.schema import (
    ChoiceBase,
    DebugItem,
    ItemBase,
    Outcome,
    PredictOutputItem,
    RankExpectation,
)
from executor.contract import RankResult, RunResult, RunStatus


class Verdict(StrEnum):
    """What verification concluded about one item."""

    PASS = "pass"
    FAIL = "fail"
    NEEDS_GPUS = "needs_gpus"
    NOT_EXECUTABLE = "not_executable"


@dataclass(frozen=True)
class Observation:
    """One run of a snippet and the order in which its ranks first printed."""

    result: RunResult
    first_output_order: tuple[int, ...] = ()


@dataclass
class ItemReport:
    """The verdict on one item with the reasons and the evidence."""

    item_id: str
    verdict: Verdict
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)


def normalise(text: str) -> str:
    """Ignore trailing whitespace on each line and trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def _expectations_for(outcome: Outcome, rank: int) -> list[RankExpectation]:
    return [expectation for key, expectation in outcome.ranks.items() if key in ("all", str(rank))]


def rank_mismatches(expectation: RankExpectation, observed: RankResult) -> list[str]:
    """Return how one rank's observed result differs from an expectation (empty if it matches)."""
    problems = []
    where = f"rank {observed.rank}"
    if expectation.stdout is not None and normalise(observed.stdout) != normalise(
        expectation.stdout
    ):
        problems.append(f"{where} printed {observed.stdout!r}, expected {expectation.stdout!r}")
    if expectation.stdout_regex is not None and not re.fullmatch(
        expectation.stdout_regex, observed.stdout.rstrip("\n"), re.DOTALL
    ):
        problems.append(
            f"{where} printed {observed.stdout!r}, not matching /{expectation.stdout_regex}/"
        )
    exception = observed.exception
    if expectation.exception is not None and (
        exception is None or exception.type != expectation.exception
    ):
        got = exception.type if exception else "no exception"
        problems.append(f"{where} raised {got}, expected {expectation.exception}")
    if expectation.message_regex is not None and (
        exception is None or not re.search(expectation.message_regex, exception.message)
    ):
        got = repr(exception.message) if exception else "no exception"
        problems.append(f"{where} message {got} does not match /{expectation.message_regex}/")
    if expectation.exit_code is not None and observed.exit_code != expectation.exit_code:
        problems.append(f"{where} exited {observed.exit_code}, expected {expectation.exit_code}")
    return problems


def outcome_mismatches(outcome: Outcome, result: RunResult) -> list[str]:
    """Return how a run differs from an outcome (empty when the outcome describes the run)."""
    hung = result.status is RunStatus.TIMEOUT
    if outcome.hangs and not hung:
        return [f"expected a hang, but the run ended with status {result.status.value}"]
    if not outcome.hangs and hung:
        return ["the run hung (timed out), but the outcome does not say hangs: true"]
    problems = []
    ranks = {rank.rank: rank for rank in result.ranks}
    for key in outcome.ranks:
        if key != "all" and int(key) not in ranks:
            problems.append(f"rank {key} does not exist in a run of {len(ranks)} rank(s)")
    for rank_number, observed in sorted(ranks.items()):
        for expectation in _expectations_for(outcome, rank_number):
            problems.extend(rank_mismatches(expectation, observed))
    return problems


def is_checkable(outcome: Outcome | None) -> bool:
    """Whether an outcome says anything a run could confirm or refute."""
    return outcome is not None and (bool(outcome.ranks) or outcome.hangs)


def keyed_outcomes(item: ItemBase) -> list[tuple[str, Outcome]]:
    """The outcomes that must hold: the keyed options' and, for debug items, the failure."""
    found: list[tuple[str, Outcome]] = []
    if isinstance(item, DebugItem):
        found.append(("failure", item.failure))
    if isinstance(item, ChoiceBase):
        for option in item.options:
            if option.id in item.answer_ids and is_checkable(option.outcome):
                assert option.outcome is not None
                found.append((f"key {option.id}", option.outcome))
    return found


def distractor_outcomes(item: ItemBase) -> list[tuple[str, Outcome]]:
    """The outcomes of wrong options: none may describe what was observed."""
    if not isinstance(item, ChoiceBase):
        return []
    return [
        (f"distractor {option.id}", option.outcome)
        for option in item.options
        if option.id not in item.answer_ids
        and option.outcome is not None
        and is_checkable(option.outcome)
    ]


def judge(item: ItemBase, observations: Sequence[Observation]) -> ItemReport:
    """Prove (or refute) an item's key from repeated observations of its snippet."""
    report = ItemReport(item.id, Verdict.PASS, observations=list(observations))
    keyed = keyed_outcomes(item)
    if not keyed:
        report.problems.append(
            "the key has no outcome to verify (add `outcome:` to the keyed option or a `failure:`)"
        )
    if isinstance(item, PredictOutputItem):
        # Every option of a predict-output item is a claim about the output: one that says
        # nothing checkable cannot be shown false, so "no distractor matches" would be unproven.
        report.problems.extend(
            f"option {option.id} has no outcome: verify cannot show that it is false"
            for option in item.options
            if option.id not in item.answer_ids and not is_checkable(option.outcome)
        )
    for index, observation in enumerate(observations, start=1):
        result = observation.result
        if result.status in (RunStatus.REJECTED, RunStatus.INTERNAL_ERROR):
            report.problems.append(f"run {index}: executor {result.status.value}: {result.message}")
            continue
        for label, outcome in keyed:
            report.problems.extend(
                f"run {index}: {label}: {problem}"
                for problem in outcome_mismatches(outcome, result)
            )
        for label, outcome in distractor_outcomes(item):
            if not outcome_mismatches(outcome, result):
                report.problems.append(f"run {index}: {label} also matches what was observed")
    report.problems.extend(_variation_problems(keyed, observations, report.notes))
    if report.problems:
        report.verdict = Verdict.FAIL
    return report


def _variation_problems(
    keyed: Sequence[tuple[str, Outcome]], observations: Sequence[Observation], notes: list[str]
) -> list[str]:
    """Output that varies between runs must not be keyed as fixed."""
    problems: list[str] = []
    if len(observations) < 2:
        return problems
    # Order only matters when ranks print different things: identical lines read the same in
    # any order.
    orders = {
        observation.first_output_order
        for observation in observations
        if len(observation.first_output_order) > 1
        and len({normalise(rank.stdout) for rank in observation.result.ranks}) > 1
    }
    claims_fixed_order = any(not outcome.order_varies for _label, outcome in keyed)
    claims_varying_order = any(outcome.order_varies for _label, outcome in keyed)
    if len(orders) > 1 and claims_fixed_order:
        problems.append(
            f"which rank prints first varied between runs ({sorted(orders)}); the key "
            "must say order_varies: true"
        )
    if len(orders) <= 1 and claims_varying_order:
        notes.append(f"rank order did not vary in {len(observations)} runs (allowed: it may)")
    for label, outcome in keyed:
        exact_ranks = {
            key for key, expectation in outcome.ranks.items() if expectation.stdout is not None
        }
        if not exact_ranks:
            continue
        for rank in range(max(len(o.result.ranks) for o in observations)):
            if "all" not in exact_ranks and str(rank) not in exact_ranks:
                continue
            seen = {
                normalise(o.result.ranks[rank].stdout)
                for o in observations
                if rank < len(o.result.ranks)
            }
            if len(seen) > 1:
                problems.append(
                    f"{label}: rank {rank}'s output varies between runs, so it cannot "
                    "be keyed as fixed text (seed it, or use stdout_regex)"
                )
    return problems

"""Prove keys against observed runs: pure matching of Outcome claims to RunResults.

An outcome is a claim about exactly what it states: the ranks it names (or `all`), and the run
as a whole (`hangs`, `order_varies`). It is true when every stated constraint holds in every
observed run, and false when one fails in some run; what it leaves out is not part of it. The
key must be true; every distractor must be false, shown false by a run: a distractor whose
stated constraints all hold "also matches", however little it states. Claims about variation
(rank order, output that differs across ranks or runs) are judged over the whole set of runs.

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
    InlineProof,
    ItemBase,
    NumericItem,
    Outcome,
    PredictOutputItem,
    RankExpectation,
    RankOutcome,
)
from app.verification.hangs import where_stuck
from executor.contract import RankResult, RankStatus, RunResult, RunStatus


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
    long_limit: bool = False  # the re-run with a much longer limit that tells a hang from slowness
    hang_proof: str | None = None  # a time-out proven a hang by its ranks' stacks (hangs.py)
    fixed: bool = False  # a run of a debug item's fixed code


@dataclass
class ItemReport:
    """The verdict on one item with the reasons and the evidence."""

    item_id: str
    verdict: Verdict
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    # The executor failed (down, or it spoiled every try of a run): the verdict says nothing
    # about the key, so it is neither recorded nor written to the proofs file.
    executor_failed: bool = False


def normalise(text: str) -> str:
    """Ignore trailing whitespace on each line and trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def stdout_matches(pattern: str, stdout: str) -> bool:
    """Whether a `stdout_regex` matches a rank's whole output (DOTALL: `.` crosses lines).

    Newlines at the very end of the output do not count: an author writes the regex of what a
    print shows, with its final `\n` or without it, and both must match. So the regex is tried
    on the output as printed, without its final newlines, and with exactly one."""
    body = stdout.rstrip("\n")
    forms = {stdout, body, body + "\n"} if body else {stdout, body}
    return any(re.fullmatch(pattern, form, re.DOTALL) for form in forms)


def rank_outcome(observed: RankResult) -> str:
    """How a rank ended, in the words of RankOutcome (or 'exits with code N')."""
    if observed.status is RankStatus.TIMEOUT:
        return RankOutcome.HANGS.value
    if observed.status is RankStatus.KILLED:
        return RankOutcome.KILLED.value
    if observed.exception is not None:
        return RankOutcome.RAISES.value
    if observed.exit_code == 0 and observed.status is RankStatus.OK:
        return RankOutcome.RETURNS.value
    return f"exits with code {observed.exit_code}"


def _describe(observed: RankResult) -> str:
    ended = rank_outcome(observed)
    if observed.exception is not None:
        return f"raises {observed.exception.type}"
    if observed.status is RankStatus.KILLED and observed.exit_code is not None:
        return f"is killed (exit {observed.exit_code})"
    if ended == "hangs" and observed.stuck is not None:
        return f"is blocked at the time limit (stuck at {observed.stuck.describe()})"
    return {"hangs": "is blocked at the time limit", "killed": "is killed"}.get(ended, ended)


def rank_mismatches(
    expectation: RankExpectation,
    observed: RankResult,
    run_hangs: bool = False,
    peers: Sequence[RankResult] = (),
) -> list[str]:
    """Return how one rank's observed result differs from an expectation (empty if it matches)."""
    problems = []
    where = f"rank {observed.rank}"
    expected_status = expectation.implied_status(run_hangs)
    if expected_status is not None and rank_outcome(observed) != expected_status.value:
        problems.append(
            f"{where} {_describe(observed)}, but the claim is that it {expected_status}"
        )
    if expectation.stdout is not None and normalise(observed.stdout) != normalise(
        expectation.stdout
    ):
        problems.append(f"{where} printed {observed.stdout!r}, expected {expectation.stdout!r}")
    if expectation.stdout_regex is not None and not stdout_matches(
        expectation.stdout_regex, observed.stdout
    ):
        problems.append(
            f"{where} printed {observed.stdout!r}, not matching /{expectation.stdout_regex}/"
        )
    if expectation.stderr_regex is not None and not re.search(
        expectation.stderr_regex, observed.stderr
    ):
        problems.append(f"{where}'s stderr has nothing matching /{expectation.stderr_regex}/")
    exception = observed.exception
    if expectation.exception is not None and (
        exception is None or not exception.is_a(expectation.exception)
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
    if expectation.differs_across_ranks is not None:
        mine = normalise(observed.stdout)
        others = [peer for peer in peers if peer.rank != observed.rank]
        same = [peer.rank for peer in others if normalise(peer.stdout) == mine]
        differ = [peer.rank for peer in others if normalise(peer.stdout) != mine]
        if expectation.differs_across_ranks and same:
            problems.append(f"{where} printed the same as rank(s) {same}, not something different")
        if not expectation.differs_across_ranks and differ:
            problems.append(f"{where} printed something else than rank(s) {differ}, not the same")
    return problems


def peers_by_rank(ranks: Sequence[RankResult]) -> dict[int, RankResult]:
    """Index a run's ranks by rank number."""
    return {rank.rank: rank for rank in ranks}


def _expectations_for(outcome: Outcome, rank: int) -> list[RankExpectation]:
    return [expectation for key, expectation in outcome.ranks.items() if key in ("all", str(rank))]


def _blocked(result: RunResult) -> list[int]:
    return [rank.rank for rank in result.ranks if rank.status is RankStatus.TIMEOUT]


def run_mismatches(outcome: Outcome, result: RunResult) -> list[str]:
    """Return each stated constraint that one run shows false (empty: the run bears it out).

    Ranks the outcome does not name, and the run as a whole when it says nothing of `hangs`,
    are not part of the claim: nothing they do can make it false.
    """
    hung = result.status is RunStatus.TIMEOUT
    problems = []
    if outcome.hangs is True and not hung:
        problems.append(f"expected a hang, but the run ended with status {result.status.value}")
    if outcome.hangs is False and hung:
        stuck = where_stuck(result)
        when = "proven stuck before" if result.stopped_when_stuck else "blocked at"
        problems.append(
            f"the run hung (rank(s) {_blocked(result)} {when} the time limit"
            f"{'; ' + stuck if stuck else ''}), but the claim is that it ends (hangs: false)"
        )
    ranks = peers_by_rank(result.ranks)
    for key in outcome.ranks:
        if key != "all" and int(key) not in ranks:
            problems.append(f"rank {key} does not exist in a run of {len(ranks)} rank(s)")
    run_hangs = outcome.hangs is True
    for rank_number, observed in sorted(ranks.items()):
        for expectation in _expectations_for(outcome, rank_number):
            problems.extend(rank_mismatches(expectation, observed, run_hangs, result.ranks))
    return problems


def outcome_mismatches(outcome: Outcome, result: RunResult) -> list[str]:
    """Return how a single run differs from an outcome (empty when the outcome describes it)."""
    return run_mismatches(outcome, result)


def claim_problems(outcome: Outcome, observations: Sequence[Observation]) -> list[str]:
    """Every stated constraint some run shows false, with the runs (empty: the claim is true)."""
    by_problem: dict[str, list[int]] = {}
    for index, observation in enumerate(observations, start=1):
        for problem in run_mismatches(outcome, observation.result):
            by_problem.setdefault(problem, []).append(index)
    problems = [f"{_runs(indexes)}: {problem}" for problem, indexes in by_problem.items()]
    problems.extend(_variation_problems(outcome, observations))
    return problems


def _runs(indexes: list[int]) -> str:
    return ("run " if len(indexes) == 1 else "runs ") + ", ".join(map(str, indexes))


def varying_order(observations: Sequence[Observation]) -> set[tuple[int, ...]]:
    """The first-output orders seen, counting only runs where ranks print different things."""
    return {
        observation.first_output_order
        for observation in observations
        if len(observation.first_output_order) > 1
        and len({normalise(rank.stdout) for rank in observation.result.ranks}) > 1
    }


def _variation_problems(outcome: Outcome, observations: Sequence[Observation]) -> list[str]:
    """Claims over the set of runs: fixed rank order, output that varies or not."""
    problems: list[str] = []
    orders = varying_order(observations)
    # Only `order_varies: false` claims an order. `true` allows either order: runs that
    # happened to agree cannot show it false, so it is never what makes a claim wrong.
    if len(orders) > 1 and outcome.order_varies is False:
        problems.append(
            f"which rank prints first varied between runs ({sorted(orders)}), but the claim "
            "is a fixed order (order_varies: false)"
        )
    if len(observations) < 2:
        return problems
    nproc = max(len(observation.result.ranks) for observation in observations)
    for rank in range(nproc):
        seen = {
            normalise(peers_by_rank(o.result.ranks)[rank].stdout)
            for o in observations
            if rank in peers_by_rank(o.result.ranks)
        }
        for expectation in _expectations_for(outcome, rank):
            varies = expectation.varies_between_runs
            if varies is None and expectation.stdout is not None:
                varies = False  # fixed text is a claim that the output never changes
            if varies is False and len(seen) > 1:
                problems.append(
                    f"rank {rank}'s output varies between runs ({len(seen)} different outputs "
                    f"in {len(observations)} runs), so it cannot be keyed as fixed text (seed "
                    "it, or claim varies_between_runs)"
                )
            if varies is True and len(seen) == 1:
                problems.append(
                    f"rank {rank} printed the same in all {len(observations)} runs, but the "
                    "claim is that its output varies between runs"
                )
    return problems


def is_checkable(outcome: Outcome | None) -> bool:
    """Whether an option has an outcome: the schema refuses one that states nothing."""
    return outcome is not None


def stated(outcome: Outcome) -> str:
    """What an outcome claims, in short: the constraints a run could show false."""
    parts = []
    if outcome.hangs is not None:
        parts.append("the run hangs" if outcome.hangs else "the run ends")
    if outcome.order_varies is False:
        parts.append("a fixed rank order")
    for key, expectation in outcome.ranks.items():
        fields = expectation.model_dump(mode="json", exclude_none=True)
        claims = ", ".join(f"{name} {value!r}" for name, value in fields.items())
        parts.append(f"{'every rank' if key == 'all' else f'rank {key}'}: {claims}")
    return "; ".join(parts) or "nothing"


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


def expects_hang(outcome: Outcome | None) -> bool:
    """Whether an outcome says the run hangs (as a whole, or some rank's status)."""
    if outcome is None:
        return False
    return outcome.hangs is True or any(
        rank.status is RankOutcome.HANGS for rank in outcome.ranks.values()
    )


def claims_hang(claimant: ItemBase | InlineProof) -> bool:
    """Whether what must hold of a snippet's runs says that it hangs: an item's key (a debug
    item's failure included) or a proof's outcome."""
    if isinstance(claimant, InlineProof):
        return expects_hang(claimant.outcome)
    return any(expects_hang(outcome) for _, outcome in keyed_outcomes(claimant))


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
    if isinstance(item, NumericItem):
        return judge_numeric(item, observations)
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
    usable = _usable(observations, report)
    runs = [o for o in usable if not o.fixed]
    report.problems.extend(_hang_problems(runs, report.notes))
    for label, outcome in keyed:
        report.problems.extend(f"{label}: {problem}" for problem in claim_problems(outcome, runs))
    for label, outcome in distractor_outcomes(item):
        if not runs:
            continue
        if not claim_problems(outcome, runs):
            report.problems.append(
                f"{label} also matches what was observed: all it states ({stated(outcome)}) "
                f"held in every one of {len(runs)} run(s); a distractor must be shown false"
            )
            continue
        _note_partly_true(label, outcome, runs, report.notes)
    if isinstance(item, DebugItem):
        report.problems.extend(_fix_problems(item, [o for o in usable if o.fixed]))
    _note_order_and_randomness(keyed, runs, report.notes)
    if report.problems:
        report.verdict = Verdict.FAIL
    return report


def printed_value(item: NumericItem, result: RunResult) -> tuple[float | None, str]:
    """The number a run printed where the item's `printed:` says, or None and why not."""
    assert item.printed is not None
    where = f"rank {item.printed.rank}"
    observed = peers_by_rank(result.ranks).get(item.printed.rank)
    if observed is None:
        return None, f"{where} does not exist in a run of {len(result.ranks)} rank(s)"
    if rank_outcome(observed) != RankOutcome.RETURNS.value:
        return None, f"{where} {_describe(observed)}, so the value it printed is not proven"
    text = observed.stdout.strip()
    if item.printed.regex is not None:
        match = re.search(item.printed.regex, observed.stdout)
        if match is None:
            return (
                None,
                f"{where} printed {observed.stdout!r}, nothing matching /{item.printed.regex}/",
            )
        text = match.group(1).strip()
    try:
        return float(text), text
    except ValueError:
        return None, f"{where} printed {text!r} where the value should be, not a number"


def judge_numeric(item: NumericItem, observations: Sequence[Observation]) -> ItemReport:
    """Prove (or refute) a numeric key: in every run, the value the snippet prints (where
    `printed:` says) is within the item's tolerance of the answer."""
    report = ItemReport(item.id, Verdict.PASS, observations=list(observations))
    runs = _usable(observations, report)
    if not runs and not report.problems:
        report.problems.append("no run was observed")
    key = f"{item.answer:g}" + (f" ± {item.tolerance:g}" if item.tolerance else "")
    for index, observation in enumerate(runs, start=1):
        value, text = printed_value(item, observation.result)
        if value is None:
            report.problems.append(f"run {index}: {text}")
        elif not abs(value - item.answer) <= item.tolerance + 1e-12:
            report.problems.append(
                f"run {index}: rank {item.printed.rank if item.printed else 0} printed {text}, "
                f"but the answer is {key}"
            )
    if report.problems:
        report.verdict = Verdict.FAIL
    return report


def judge_proof(proof_id: str, outcome: Outcome, observations: Sequence[Observation]) -> ItemReport:
    """Prove (or refute) a card's or cheat sheet's proof as a key is proven: its outcome must
    hold in every run. A proof claims exactly what it states (a rank it names, `all`, a hang),
    so it need not describe every rank."""
    report = ItemReport(proof_id, Verdict.PASS, observations=list(observations))
    runs = _usable(observations, report)
    report.problems.extend(_hang_problems(runs, report.notes))
    report.problems.extend(f"proof: {problem}" for problem in claim_problems(outcome, runs))
    if not runs:
        report.problems.append("proof: no run was observed")
    _note_order_and_randomness([("proof", outcome)], runs, report.notes)
    if report.problems:
        report.verdict = Verdict.FAIL
    return report


def _usable(observations: Sequence[Observation], report: ItemReport) -> list[Observation]:
    """The runs the executor did run; a refused or broken run is a problem of the report."""
    usable: list[Observation] = []
    for index, observation in enumerate(observations, start=1):
        result = observation.result
        if result.status in (RunStatus.REJECTED, RunStatus.INTERNAL_ERROR):
            report.problems.append(f"run {index}: executor {result.status.value}: {result.message}")
        else:
            usable.append(observation)
    return usable


def _hang_problems(runs: Sequence[Observation], notes: list[str]) -> list[str]:
    """A time-out is a hang only if a much longer re-run is still blocked."""
    timed_out = [o for o in runs if o.result.status is RunStatus.TIMEOUT and not o.long_limit]
    if not timed_out:
        return []
    long_runs = [o for o in runs if o.long_limit]
    proofs = [o.hang_proof for o in timed_out if o.hang_proof]
    if proofs and not long_runs:
        runs_proven = f" in {len(proofs)} runs" if len(proofs) > 1 else ""
        note = f"hang proven by the ranks' stacks{runs_proven}: {proofs[0]}"
        early = [o for o in timed_out if o.result.stopped_when_stuck and o.hang_proof]
        if early and not timed_out[0].result.stopped_when_stuck:
            spans = sorted(o.result.duration_ms / 1000 for o in early)
            note += (
                f"; the first run waited out its limit, and the executor stopped the other "
                f"{len(early)} after {spans[0]:.1f}–{spans[-1]:.1f} s, before their limit, once "
                f"every rank was proven stuck"
            )
        notes.append(note)
        return []
    if not long_runs:
        return ["the run timed out, but no longer re-run proved that it hangs"]
    problems = []
    for long_run in long_runs:
        seconds = long_run.result.duration_ms / 1000
        if long_run.result.status is RunStatus.TIMEOUT:
            stuck = where_stuck(long_run.result)
            notes.append(
                f"hang confirmed: still blocked after {seconds:.0f} s; blocked rank(s) "
                f"{_blocked(long_run.result)}{' (' + stuck + ')' if stuck else ''}"
            )
        else:
            problems.append(
                f"the run timed out at its limit but ended ({long_run.result.status.value}) "
                f"after {seconds:.1f} s with a longer limit: a slow rank, not a hang (raise "
                "launch.timeout_s, or fix the claim)"
            )
    return problems


def _fix_problems(item: DebugItem, fixed_runs: Sequence[Observation]) -> list[str]:
    """The keyed fix must run cleanly on every rank and not show the claimed failure."""
    problems: list[str] = []
    for index, observation in enumerate(fixed_runs, start=1):
        result = observation.result
        if result.status is not RunStatus.OK:
            failing = [
                f"rank {rank.rank} {_describe(rank)}"
                for rank in result.ranks
                if rank.status is not RankStatus.OK
            ]
            problems.append(
                f"fixed code, run {index}: ended {result.status.value} "
                f"({'; '.join(failing) or result.message}), so the fix is not proven"
            )
        if not run_mismatches(item.failure, result):
            problems.append(f"fixed code, run {index}: still shows the failure")
    return problems


def _quotes_output(outcome: Outcome) -> bool:
    return any(
        claim.stdout is not None or claim.stdout_regex is not None
        for claim in outcome.ranks.values()
    )


def _note_partly_true(
    label: str, outcome: Outcome, runs: Sequence[Observation], notes: list[str]
) -> None:
    """A distractor that held in some runs is still false (a claim is about every run), but an
    author should know that a learner's own run may well show it."""
    held = [i for i, o in enumerate(runs, start=1) if not run_mismatches(outcome, o.result)]
    if held and len(held) < len(runs):
        notes.append(
            f"{label} held in {_runs(held)} and is false only in the others "
            f"(it is false: a claim must hold in every run)"
        )


def _note_order_and_randomness(
    keyed: Sequence[tuple[str, Outcome]], runs: Sequence[Observation], notes: list[str]
) -> None:
    claims_varying = any(outcome.order_varies for _label, outcome in keyed)
    orders = varying_order(runs)
    if claims_varying and len(runs) > 1 and len(orders) <= 1:
        notes.append(f"rank order did not vary in {len(runs)} runs (allowed: it may)")
    quoting = [outcome for _label, outcome in keyed if _quotes_output(outcome)]
    if len(orders) > 1 and quoting and all(o.order_varies is None for o in quoting):
        notes.append(
            f"which rank prints first varied between runs ({sorted(orders)}); the key makes "
            "no claim about order (order_varies: true would tell the learner)"
        )
    drew = sorted({rank.rank for o in runs for rank in o.result.ranks if rank.unseeded_random})
    if drew:
        notes.append(
            f"rank(s) {drew} drew unseeded random numbers; their output was compared over "
            f"{len(runs)} runs"
        )

"""Prove a lab (`ranklab verify`): at every rank count a step offers, its reference solution
passes every check judged at that count, and its starter fails at least one, so a step cannot
be passed by pressing Run. Steps that need more GPUs than the executor has are reported as
such, not run."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from app.challenges.loader import LoadedLab
from app.executor_client import ExecutorClient
from app.labs.explain import Problem, explain
from app.labs.schema import LabCheck, LabStep
from app.runs.service import gpus_needed
from app.verification.batch import ExecutorFacts
from app.verification.rules import Verdict, run_mismatches
from app.verification.service import observe
from executor.contract import RunResult, RunStatus

# Said when the judge and the words disagree (a claim explain does not word): never silent.
NOT_SHOWN = "The run does not show what this check asks for yet."


@dataclass(frozen=True)
class CheckResult:
    """One check on one run: passed, or why not."""

    says: str
    problems: list[str]  # in plain words (app.labs.explain)
    diff: list[str] = field(default_factory=list)  # a short line diff, where one helps

    @property
    def passed(self) -> bool:
        """Whether the run showed what the check claims."""
        return not self.problems


def evaluate(checks: list[LabCheck], result: RunResult) -> list[CheckResult]:
    """Judge a run against a step's checks, one by one (what the learner is shown too): the
    verdict is verify's own (run_mismatches), the words app.labs.explain's."""
    judged = []
    for check in checks:
        refused = result.status in (RunStatus.REJECTED, RunStatus.INTERNAL_ERROR)
        if not refused and not run_mismatches(check.expect, result):
            judged.append(CheckResult(check.says, []))
            continue
        problems = explain(check.expect, result) or [Problem(NOT_SHOWN)]
        diff = next((problem.diff for problem in problems if problem.diff), [])
        judged.append(CheckResult(check.says, [problem.text for problem in problems], diff))
    return judged


@dataclass
class StepReport:
    """What verify found for one step."""

    lab_id: str
    path: str
    step_id: str
    verdict: Verdict = Verdict.PASS
    problems: list[str] = field(default_factory=list)


def verify_step(
    client: ExecutorClient,
    loaded: LoadedLab,
    step: LabStep,
    facts: ExecutorFacts,
    repeats: int = 3,
) -> StepReport:
    """On every rank count the step's picker offers: run its solution `repeats` times (each
    must pass every check judged at that count: a check that holds only sometimes, or only at
    some counts, would fail learners who did it right) and its starter once (it must fail one),
    and judge them."""
    report = StepReport(loaded.lab.id, loaded.path, step.id)
    needed = gpus_needed(step)
    if needed > facts.cuda_devices:
        report.verdict = Verdict.NEEDS_GPUS
        report.problems.append(f"needs {needed} GPU(s); the executor has {facts.cuda_devices}")
        return report
    counts = step.rank_choices
    for count in counts:
        # Said only where the picker offers more than one count: "on 4 ranks".
        where = f" on {count} rank{'s' if count > 1 else ''}" if len(counts) > 1 else ""
        report.problems += _count_problems(client, loaded, step, count, where, repeats)
    if report.problems:
        report.verdict = Verdict.FAIL
    return report


def _count_problems(
    client: ExecutorClient, loaded: LoadedLab, step: LabStep, count: int, where: str, repeats: int
) -> list[str]:
    """What verify finds at one rank count: the solution failing a check, the starter passing."""
    launched = step.model_copy(update={"launch": step.launch.model_copy(update={"nproc": count})})
    checks = step.checks_for(count)
    problems = []
    for attempt in range(1, repeats + 1):
        solved = evaluate(checks, observe(client, loaded.solutions[step.id], launched).result)
        failed = [
            f"the solution fails “{check.says}”{where}"
            + (f" (run {attempt} of {repeats})" if attempt > 1 else "")
            + f": {problem}"
            for check in solved
            for problem in check.problems
        ]
        if failed:
            problems += failed
            break
    started = evaluate(checks, observe(client, loaded.starter_for_verify(step.id), launched).result)
    if all(check.passed for check in started):
        problems.append(
            f"the starter already passes every check{where}: the step could be passed by "
            "pressing Run"
        )
    return problems


def verify_labs(
    client: ExecutorClient, labs: list[LoadedLab], facts: ExecutorFacts, repeats: int = 3
) -> Iterator[StepReport]:
    """Verify every step of every lab, in order."""
    for loaded in labs:
        for step in loaded.lab.steps:
            yield verify_step(client, loaded, step, facts, repeats)

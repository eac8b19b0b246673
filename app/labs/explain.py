"""Say in plain words why a run fails a lab check: what the check expected and what the run
showed, one sentence per broken claim, with a short line diff where whole outputs differ.

The verdict itself comes from app.verification.rules (the same judge as `ranklab verify`);
this module only words it for a learner, per claim of a check's outcome (how a rank ends, what
it prints, its error, its exit code, whether ranks differ, whether the run hangs). Quoted text
sits between backticks (pages show it as code); backticks inside quoted output are replaced,
so the quoting stays unambiguous. Never a regex, never a Python repr. Pure: the standard
library, the challenge schema and the executor contract.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from app.challenges.base import Outcome, RankExpectation, RankOutcome
from app.labs import readable
from app.verification.rules import normalise, rank_outcome, stdout_matches
from executor.contract import RankResult, RankStatus, RunResult, RunStatus

QUOTE_CHARS = 100
DIFF_LINES = 12


@dataclass(frozen=True)
class Problem:
    """One broken claim, in words, with the line diff that shows it (may be empty)."""

    text: str
    diff: list[str] = field(default_factory=list)


def quote(text: str) -> str:
    """Text as code in a sentence: one line, at most QUOTE_CHARS characters, no backticks."""
    flat = text.strip().replace("`", "'").replace("\n", " ⏎ ")
    if len(flat) > QUOTE_CHARS:
        flat = flat[: QUOTE_CHARS - 1].rstrip() + "…"
    return f"`{flat}`" if flat else "nothing"


def explain(outcome: Outcome, result: RunResult) -> list[Problem]:
    """Each claim of `outcome` that this run shows false, in plain words (empty: none)."""
    if result.status in (RunStatus.REJECTED, RunStatus.INTERNAL_ERROR):
        why = result.message or "the executor refused it"
        return [Problem(f"The run did not start: {why}.")]
    problems = _run_problems(outcome, result)
    ranks = {rank.rank: rank for rank in result.ranks}
    for key in outcome.ranks:
        if key != "all" and int(key) not in ranks:
            count = len(ranks)
            problems.append(
                Problem(
                    f"This check is about rank {key}, but the run had {count} "
                    f"rank{'s' if count != 1 else ''} (numbered from 0): pick at least "
                    f"{int(key) + 1} ranks."
                )
            )
    run_hangs = outcome.hangs is True
    for number, observed in sorted(ranks.items()):
        for key, expectation in outcome.ranks.items():
            if key in ("all", str(number)):
                problems.extend(rank_problems(expectation, observed, run_hangs, result.ranks))
    return problems


def _run_problems(outcome: Outcome, result: RunResult) -> list[Problem]:
    hung = result.status is RunStatus.TIMEOUT
    if outcome.hangs is True and not hung:
        return [
            Problem(
                "The run should hang (its ranks left waiting for each other until the time "
                f"limit); it {_ended(result)}."
            )
        ]
    if outcome.hangs is False and hung:
        blocked = [rank for rank in result.ranks if rank.status is RankStatus.TIMEOUT]
        where = "; ".join(f"rank {rank.rank} {_stuck(rank)}" for rank in blocked)
        return [
            Problem(f"The run should end, but it hung until the time limit stopped it ({where}).")
        ]
    return []


def _ended(result: RunResult) -> str:
    return {
        RunStatus.OK: "ended normally",
        RunStatus.ERROR: "ended with an error",
        RunStatus.MEMORY_LIMIT: "ran out of memory",
        RunStatus.OUTPUT_LIMIT: "printed too much and was cut off",
    }.get(result.status, f"ended ({result.status.value})")


def _stuck(rank: RankResult) -> str:
    if rank.stuck is None or (rank.stuck.line is None and not rank.stuck.call):
        return "was still waiting"
    where = f"was stuck at line {rank.stuck.line}" if rank.stuck.line else "was stuck"
    return where + (f", waiting in `{rank.stuck.call}`" if rank.stuck.call else "")


def _did(rank: RankResult) -> str:
    """How a rank ended, as the end of "it …"."""
    if rank.exception is not None:
        message = f": {rank.exception.message}" if rank.exception.message else ""
        return f"raised {quote(rank.exception.type + message)}"
    if rank.status is RankStatus.TIMEOUT:
        return _stuck(rank) + " when the time limit stopped it"
    if rank.status is RankStatus.KILLED:
        return "was killed" + (f" (exit code {rank.exit_code})" if rank.exit_code else "")
    if rank.status is RankStatus.OK and rank.exit_code == 0:
        return "finished normally"
    return f"exited with code {rank.exit_code}"


_SHOULD_END = {
    RankOutcome.RETURNS.value: "finish normally",
    RankOutcome.RAISES.value: "raise an error",
    RankOutcome.HANGS.value: "still be waiting when the time limit stops the run",
    RankOutcome.KILLED.value: "be killed",
}


def rank_problems(
    expectation: RankExpectation,
    observed: RankResult,
    run_hangs: bool = False,
    peers: list[RankResult] | None = None,
) -> list[Problem]:
    """Each claim about one rank that it shows false, in plain words."""
    who = f"rank {observed.rank}"
    problems: list[Problem] = []
    status = expectation.implied_status(run_hangs)
    if status is not None and rank_outcome(observed) != status.value:
        problems.append(Problem(f"{who} should {_SHOULD_END[status.value]}; it {_did(observed)}."))
    if expectation.stdout is not None and normalise(observed.stdout) != normalise(
        expectation.stdout
    ):
        problems.append(_exact_output(who, expectation.stdout, observed.stdout))
    if expectation.stdout_regex is not None and not stdout_matches(
        expectation.stdout_regex, observed.stdout
    ):
        problems.append(_output_like(who, expectation.stdout_regex, observed.stdout))
    if expectation.stderr_regex is not None and not re.search(
        expectation.stderr_regex, observed.stderr
    ):
        problems.append(_error_output(who, expectation.stderr_regex, observed.stderr))
    problems.extend(_exception_problems(who, expectation, observed))
    if expectation.exit_code is not None and observed.exit_code != expectation.exit_code:
        problems.append(
            Problem(
                f"{who} should exit with code {expectation.exit_code}; "
                f"it exited with code {observed.exit_code}."
            )
        )
    if expectation.differs_across_ranks is not None:
        problems.extend(_across_ranks(who, expectation.differs_across_ranks, observed, peers))
    return problems


def _exact_output(who: str, expected: str, printed: str) -> Problem:
    want, got = normalise(expected).splitlines(), normalise(printed).splitlines()
    if len(want) == 1 and len(got) <= 1:
        return Problem(f"{who} should print {quote(want[0])}; it printed {_printed(printed)}.")
    return Problem(
        f"{who} should print exactly the {len(want)} line(s) below (− expected, + printed); "
        f"it printed {len(got)} line(s).",
        line_diff(want, got),
    )


def line_diff(want: list[str], got: list[str]) -> list[str]:
    """The lines that differ, marked − (expected) and + (printed), at most DIFF_LINES."""
    lines = []
    for line in difflib.ndiff(want, got):
        if line.startswith("- "):
            lines.append("− " + line[2:])
        elif line.startswith("+ "):
            lines.append("+ " + line[2:])
    if len(lines) > DIFF_LINES:
        lines = [*lines[: DIFF_LINES - 1], f"… and {len(lines) - DIFF_LINES + 1} more"]
    return lines


def _printed(output: str) -> str:
    return quote(output) if output.strip() else "nothing"


def _closest(wanted: str, output: str) -> str | None:
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return None
    best = max(lines, key=lambda line: difflib.SequenceMatcher(None, wanted, line).ratio())
    return best


def _output_like(who: str, pattern: str, printed: str) -> Problem:
    asked = readable.read(pattern)
    if asked is None:
        return Problem(
            f"{who} did not print what this check looks for; it printed {_printed(printed)}."
        )
    missing = [line for line in asked.lines if not line.found_in(printed)]
    number = " (<n> stands for a number)" if readable.NUMBER in pattern_text(asked) else ""
    if not printed.strip():
        wanted = " then ".join(quote(line.text) for line in asked.lines)
        return Problem(f"{who} should print a line like {wanted}{number}; it printed nothing.")
    if missing:
        line = missing[0]
        closest = quote(_closest(line.text, printed) or "")
        one_line = len(printed.strip().splitlines()) == 1
        seen = f"it printed {closest}" if one_line else f"the closest line it printed is {closest}"
        return Problem(f"{who} should print a line like {quote(line.text)}{number}; {seen}.")
    if len(asked.lines) > 1:
        wanted = " then ".join(quote(line.text) for line in asked.lines)
        return Problem(f"{who} should print {wanted}, in that order; it printed them otherwise.")
    return Problem(
        f"{who} should print only a line like {quote(asked.lines[0].text)}{number}; "
        f"it printed more: {_printed(printed)}."
    )


def pattern_text(asked: readable.Readable) -> str:
    """The whole text a readable regex asks for."""
    return "\n".join(line.text for line in asked.lines)


def _error_output(who: str, pattern: str, stderr: str) -> Problem:
    asked = readable.read(pattern)
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    seen = f"its last error line is {quote(last)}" if last else "it wrote no error output"
    if asked is None:
        return Problem(f"{who}'s error output should show what this check looks for; {seen}.")
    return Problem(
        f"{who}'s error output should include something like {quote(asked.lines[0].text)}; {seen}."
    )


def _exception_problems(
    who: str, expectation: RankExpectation, observed: RankResult
) -> list[Problem]:
    problems = []
    exception = observed.exception
    if expectation.exception is not None and (
        exception is None or not exception.is_a(expectation.exception)
    ):
        got = f"raised {quote(exception.type)}" if exception else _did(observed)
        problems.append(Problem(f"{who} should raise {quote(expectation.exception)}; it {got}."))
    if expectation.message_regex is not None and (
        exception is None or not re.search(expectation.message_regex, exception.message)
    ):
        asked = readable.read(expectation.message_regex)
        wanted = (
            f"say something like {quote(asked.lines[0].text)}"
            if asked is not None
            else "say what this check looks for"
        )
        got = f"it said {quote(exception.message)}" if exception else f"it {_did(observed)}"
        problems.append(Problem(f"{who}'s error message should {wanted}; {got}."))
    return problems


def _across_ranks(
    who: str, differs: bool, observed: RankResult, peers: list[RankResult] | None
) -> list[Problem]:
    mine = normalise(observed.stdout)
    others = [peer for peer in peers or [] if peer.rank != observed.rank]
    if differs:
        same = [peer for peer in others if normalise(peer.stdout) == mine]
        if same:
            each = "both" if len(same) == 1 else "each"
            return [
                Problem(
                    f"{who} should print something different from {_names(same)}; "
                    f"{each} printed {_printed(observed.stdout)}."
                )
            ]
        return []
    differ = [peer for peer in others if normalise(peer.stdout) != mine]
    if not differ:
        return []
    first = differ[0]
    return [
        Problem(
            f"{who} should print the same as rank {first.rank}; {who} printed "
            f"{_printed(observed.stdout)} and rank {first.rank} printed {_printed(first.stdout)}."
        )
    ]


def _names(ranks: list[RankResult]) -> str:
    numbers = [str(rank.rank) for rank in ranks]
    if len(numbers) == 1:
        return f"rank {numbers[0]}"
    return "ranks " + ", ".join(numbers[:-1]) + " and " + numbers[-1]

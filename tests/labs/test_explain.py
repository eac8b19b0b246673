"""A failed lab check says in plain words what was expected and what was seen, one test per
kind of claim; no regex and no Python repr ever reaches the learner."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.challenges.base import Outcome
from app.labs import readable
from app.labs.explain import explain, line_diff, quote
from app.labs.schema import LabCheck
from app.labs.verify import evaluate
from executor.contract import (
    ExceptionInfo,
    RankResult,
    RankStatus,
    RunResult,
    RunStatus,
    StuckAt,
)


def rank(number: int, stdout: str = "", **fields: Any) -> RankResult:
    fields.setdefault("status", RankStatus.OK)
    fields.setdefault("exit_code", 0 if fields["status"] is RankStatus.OK else 1)
    return RankResult(rank=number, stdout=stdout, **fields)


def run(*ranks: RankResult, status: RunStatus = RunStatus.OK) -> RunResult:
    return RunResult(status=status, duration_ms=10, ranks=list(ranks))


def words(outcome: dict[str, Any], result: RunResult) -> list[str]:
    return [problem.text for problem in explain(Outcome.model_validate(outcome), result)]


def plain(text: str) -> None:
    """No regex syntax, no repr quoting, no escaped newline."""
    assert "\\" not in text and "(?s)" not in text and ".*" not in text, text
    assert "'" not in text.replace("'s ", "").replace("n't", ""), text


def test_a_regex_reads_back_as_the_line_it_asks_for() -> None:
    asked = readable.read(r"(?s).*rank \d+ local grad \[-4\.0, -8\.0\].*")
    assert asked is not None and asked.contains
    assert [line.text for line in asked.lines] == ["rank <n> local grad [-4.0, -8.0]"]
    choice = readable.read(r"(?s).*Rank 0 (→|->) cuda:0.*")
    assert choice is not None and choice.lines[0].text == "Rank 0 → cuda:0"
    two = readable.read(r"(?s).*loss 1\.5\n.*done")
    assert two is not None and [line.text for line in two.lines] == ["loss 1.5", "done"]


@pytest.mark.parametrize(
    "pattern", [r"(?s)(?!.*DataParallel).*", r"a+b", r"[01] ranks", r"(x)?y", r"\bword"]
)
def test_a_regex_that_is_not_plain_text_does_not_read(pattern: str) -> None:
    assert readable.read(pattern) is None


def test_stdout_regex_says_the_line_expected_and_the_line_printed() -> None:
    said = words(
        {"ranks": {"1": {"stdout_regex": r"tensor\(\[3\.\]\)"}}},
        run(rank(0, "tensor([3.])\n"), rank(1, "tensor([1.])\n")),
    )
    assert said == ["rank 1 should print a line like `tensor([3.])`; it printed `tensor([1.])`."]
    plain(said[0])


def test_stdout_regex_with_many_lines_names_the_closest_one() -> None:
    (said,) = words(
        {"ranks": {"0": {"stdout_regex": r"(?s).*mean loss 1\.5\n.*"}}},
        run(rank(0, "step 1\nmean loss 1.2\ndone\n")),
    )
    assert said == (
        "rank 0 should print a line like `mean loss 1.5`; the closest line it printed is "
        "`mean loss 1.2`."
    )


def test_stdout_regex_with_a_number_says_what_the_placeholder_means() -> None:
    (said,) = words({"ranks": {"all": {"stdout_regex": r"hello from rank \d+ of \d+"}}},
                    run(rank(0, "hello\n")))  # fmt: skip
    assert said == (
        "rank 0 should print a line like `hello from rank <n> of <n>` (<n> stands for a "
        "number); it printed `hello`."
    )


def test_stdout_regex_and_no_output() -> None:
    (said,) = words({"ranks": {"0": {"stdout_regex": r"(?s).*sum 1"}}}, run(rank(0, "")))
    assert said == "rank 0 should print a line like `sum 1`; it printed nothing."


def test_an_unreadable_regex_still_speaks_plainly() -> None:
    (said,) = words({"ranks": {"1": {"stdout_regex": r"(?s)(?!.*DataParallel).*"}}},
                    run(rank(0), rank(1, "DataParallel saw 8\n")))  # fmt: skip
    assert said == (
        "rank 1 did not print what this check looks for; it printed `DataParallel saw 8`."
    )
    plain(said)


def test_exact_stdout_of_several_lines_comes_with_a_line_diff() -> None:
    (problem,) = explain(
        Outcome.model_validate({"ranks": {"0": {"stdout": "a\nb\nc\n"}}}), run(rank(0, "a\nB\nc\n"))
    )
    assert problem.text.startswith("rank 0 should print exactly the 3 line(s) below")
    assert problem.diff == ["− b", "+ B"]


def test_exact_stdout_of_one_line() -> None:
    (said,) = words({"ranks": {"0": {"stdout": "4"}}}, run(rank(0, "3\n")))
    assert said == "rank 0 should print `4`; it printed `3`."


def test_status_says_how_the_rank_should_end_and_how_it_did() -> None:
    error = ExceptionInfo(type="RuntimeError", message="boom")
    (said,) = words(
        {"ranks": {"0": {"status": "returns"}}},
        run(rank(0, status=RankStatus.ERROR, exception=error), status=RunStatus.ERROR),
    )
    assert said == "rank 0 should finish normally; it raised `RuntimeError: boom`."


def test_exception_and_its_message() -> None:
    error = ExceptionInfo(type="ValueError", message="bad size 3")
    said = words(
        {"ranks": {"0": {"exception": "RuntimeError", "message_regex": r"size \d+ mismatch"}}},
        run(rank(0, status=RankStatus.ERROR, exception=error), status=RunStatus.ERROR),
    )
    assert said == [
        "rank 0 should raise `RuntimeError`; it raised `ValueError`.",
        "rank 0's error message should say something like `size <n> mismatch`; it said "
        "`bad size 3`.",
    ]


def test_stderr_regex() -> None:
    (said,) = words({"ranks": {"0": {"stderr_regex": r"UserWarning: slow"}}},
                    run(rank(0, stderr="first\nlast line\n")))  # fmt: skip
    assert said == (
        "rank 0's error output should include something like `UserWarning: slow`; its last "
        "error line is `last line`."
    )


def test_exit_code() -> None:
    (said,) = words({"ranks": {"0": {"exit_code": 3}}}, run(rank(0, exit_code=0)))
    assert said == "rank 0 should exit with code 3; it exited with code 0."


def test_differs_across_ranks() -> None:
    (said,) = words({"ranks": {"0": {"differs_across_ranks": True}}},
                    run(rank(0, "hello\n"), rank(1, "hello\n")))  # fmt: skip
    assert said == "rank 0 should print something different from rank 1; both printed `hello`."
    (same,) = words({"ranks": {"0": {"differs_across_ranks": False}}},
                    run(rank(0, "1\n"), rank(1, "2\n")))  # fmt: skip
    assert same == (
        "rank 0 should print the same as rank 1; rank 0 printed `1` and rank 1 printed `2`."
    )


def test_a_run_that_should_end_but_hangs_says_where_ranks_were_stuck() -> None:
    stuck = StuckAt(line=7, call="dist.all_reduce")
    (said,) = words(
        {"hangs": False},
        run(rank(0, status=RankStatus.TIMEOUT, exit_code=None, stuck=stuck),
            status=RunStatus.TIMEOUT),
    )  # fmt: skip
    assert said == (
        "The run should end, but it hung until the time limit stopped it (rank 0 was stuck at "
        "line 7, waiting in `dist.all_reduce`)."
    )


def test_a_run_that_should_hang_but_ends() -> None:
    (said,) = words({"hangs": True}, run(rank(0)))
    assert said.startswith("The run should hang") and said.endswith("it ended normally.")


def test_a_check_about_a_rank_the_run_did_not_have() -> None:
    (said,) = words({"ranks": {"3": {"stdout": "x"}}}, run(rank(0, "x"), rank(1, "x")))
    assert said == (
        "This check is about rank 3, but the run had 2 ranks (numbered from 0): pick at least "
        "4 ranks."
    )


def test_a_refused_run() -> None:
    refused = RunResult(status=RunStatus.REJECTED, duration_ms=0, message="code too long")
    (said,) = words({"ranks": {"0": {"stdout": "x"}}}, refused)
    assert said == "The run did not start: code too long."


def test_quoted_output_is_one_short_line_without_backticks() -> None:
    assert quote("a `b`\nc") == "`a 'b' ⏎ c`"
    assert len(quote("x" * 500)) <= 102
    assert line_diff(["a"] * 20, ["b"] * 20)[-1] == "… and 29 more"


def test_evaluate_gives_the_learner_plain_words_and_passes_what_passes() -> None:
    three = r"tensor\(\[3\.\]\)"
    checks = [
        LabCheck.model_validate(
            {"says": f"Rank {number} prints 3",
             "expect": {"ranks": {str(number): {"stdout_regex": three}}}}
        )
        for number in (1, 0)
    ]  # fmt: skip
    failed, passed = evaluate(checks, run(rank(0, "tensor([3.])\n"), rank(1, "tensor([1.])\n")))
    assert passed.passed and not failed.passed
    assert failed.problems == [
        "rank 1 should print a line like `tensor([3.])`; it printed `tensor([1.])`."
    ]
    assert not re.search(r"\\\[|'tensor", " ".join(failed.problems))

"""An outcome is judged on exactly what it states, over every observed run (recorded runs)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.challenges.schema import Outcome
from app.verification.rules import Observation, Verdict, claim_problems, judge
from executor.contract import Environment, ExceptionInfo, RankResult, RunResult
from tests.support.items import debug_item, predict_item

ENV = Environment(torch="2.13.0+cpu", backend="gloo", device="cpu", nproc=2, python="3.11.7")


def rank(number: int, stdout: str = "", status: str = "ok", **fields: object) -> RankResult:
    exit_code = {"ok": 0, "error": 1, "timeout": None, "killed": -9}[status]
    return RankResult(rank=number, status=status, exit_code=exit_code, stdout=stdout, **fields)


def run(*ranks: RankResult, status: str = "ok") -> Observation:
    return Observation(RunResult(status=status, duration_ms=90, ranks=list(ranks), environment=ENV))


def both_print(first: str, second: str) -> Observation:
    return run(rank(0, first), rank(1, second))


def one_rank_hangs() -> list[Observation]:
    """Rank 0 prints and returns while rank 1 blocks: a short run and its long re-run."""
    ranks = (rank(0, "done\n"), rank(1, "", status="timeout"))
    short, long = run(*ranks, status="timeout"), run(*ranks, status="timeout")
    return [short, Observation(long.result, long_limit=True)]


def option(letter: str, outcome: dict, text: str = "t") -> dict:
    return {"id": letter, "text": text, "outcome": outcome}


def says(rank_key: str, **claim: object) -> dict:
    return {"ranks": {rank_key: claim}}


SUM_RUNS = [both_print("sum 3.0\n", "sum 3.0\n")] * 3


def test_a_one_rank_key_is_true_when_that_rank_bears_it_out():
    item = predict_item(
        options=[
            option("A", says("0", stdout="sum 3.0\n")),
            option("B", says("1", stdout="sum 3.0\n")),
            option("C", says("1", stdout="sum 2.0\n")),
        ],
        answer=["A", "B"],
    )
    report = judge(item, SUM_RUNS)
    assert report.verdict is Verdict.PASS, report.problems


def test_a_one_rank_distractor_shown_false_by_its_rank_is_false():
    item = predict_item(
        options=[option("A", says("all", stdout="sum 3.0\n")), option("B", says("1", stdout="x\n"))]
    )
    assert judge(item, SUM_RUNS).verdict is Verdict.PASS


def test_a_distractor_whose_every_stated_claim_holds_also_matches_however_little_it_says():
    item = predict_item(
        options=[
            option("A", says("all", stdout="sum 3.0\n")),
            option("B", says("0", status="returns")),
        ]
    )
    report = judge(item, SUM_RUNS)
    assert report.verdict is Verdict.FAIL
    (problem,) = report.problems
    assert problem.startswith("distractor B also matches what was observed")
    assert "rank 0: status 'returns'" in problem and "3 run(s)" in problem


def test_a_distractor_is_not_false_for_a_rank_it_does_not_name():
    # Rank 1 printed something else: that says nothing about a claim that names only rank 0.
    runs = [both_print("sum 3.0\n", "other\n")] * 3
    item = predict_item(
        options=[
            option("A", {"ranks": {"0": {"stdout": "sum 3.0\n"}, "1": {"stdout": "other\n"}}}),
            option("B", says("0", stdout="sum 3.0\n")),
        ]
    )
    report = judge(item, runs)
    assert any(p.startswith("distractor B also matches") for p in report.problems)


def test_all_claims_every_rank_and_fails_naming_the_rank_that_differs():
    runs = [both_print("sum 3.0\n", "sum 3.0\n"), both_print("sum 3.0\n", "sum 2.0\n")]
    item = predict_item(
        options=[option("A", says("all", stdout="sum 3.0\n")), option("B", says("0", stdout="x"))]
    )
    report = judge(item, runs)
    assert report.verdict is Verdict.FAIL
    assert "key A: run 2: rank 1 printed 'sum 2.0\\n', expected 'sum 3.0\\n'" in report.problems


def test_a_claim_false_in_only_one_run_is_false_and_the_author_is_told_when_it_held():
    runs = [both_print("1\n", "1\n"), both_print("2\n", "1\n"), both_print("1\n", "1\n")]
    outcome = Outcome.model_validate(says("0", stdout="1\n"))
    assert claim_problems(outcome, runs) == [
        "run 2: rank 0 printed '2\\n', expected '1\\n'",
        "rank 0's output varies between runs (2 different outputs in 3 runs), so it cannot be "
        "keyed as fixed text (seed it, or claim varies_between_runs)",
    ]
    item = predict_item(
        options=[
            option("A", says("1", stdout="1\n")),
            option("B", says("0", stdout="1\n")),
        ]
    )
    report = judge(item, runs)
    assert report.verdict is Verdict.PASS, report.problems
    assert "distractor B held in runs 1, 3 and is false only in the others" in report.notes[0]


def test_a_rank_claim_holds_while_another_rank_hangs_unless_the_run_is_claimed_to_end():
    runs = one_rank_hangs()
    rank_zero_prints = says("0", stdout="done\n")
    assert claim_problems(Outcome.model_validate(rank_zero_prints), runs) == []
    ends = Outcome.model_validate({**rank_zero_prints, "hangs": False})
    assert claim_problems(ends, runs) == [
        "runs 1, 2: the run hung (rank(s) [1] blocked at the time limit), but the claim is "
        "that it ends (hangs: false)"
    ]
    item = predict_item(
        options=[
            option("A", {"hangs": True, "ranks": {"1": {"status": "hangs"}}}),
            option("B", rank_zero_prints),
        ]
    )
    report = judge(item, runs)
    assert report.verdict is Verdict.FAIL
    assert any(p.startswith("distractor B also matches") for p in report.problems)


def test_a_claimed_hang_is_false_when_the_run_ends_and_a_printing_rank_must_return():
    item = predict_item(options=[option("A", {"hangs": False}), option("B", {"hangs": True})])
    assert judge(item, SUM_RUNS).verdict is Verdict.PASS
    claims_prints = Outcome.model_validate(says("1", stdout=""))
    assert claim_problems(claims_prints, one_rank_hangs()) == [
        "runs 1, 2: rank 1 is blocked at the time limit, but the claim is that it returns"
    ]


def test_a_regex_is_judged_in_every_run_and_one_that_matches_anything_is_a_second_key():
    runs = [both_print("loss 0.31\n", "loss 0.29\n"), both_print("loss 0.3\n", "loss nan\n")]
    number = Outcome.model_validate(says("all", stdout_regex=r"loss \d\.\d+"))
    assert claim_problems(number, runs) == [
        "run 2: rank 1 printed 'loss nan\\n', not matching /loss \\d\\.\\d+/"
    ]
    item = predict_item(
        options=[
            option("A", says("0", stdout_regex=r"loss \d\.\d+")),
            option("B", says("1", stdout_regex=r".*")),
        ]
    )
    report = judge(item, runs)
    assert any(p.startswith("distractor B also matches") for p in report.problems)


def test_order_is_claimed_only_by_order_varies_false():
    a_first = Observation(both_print("a\n", "b\n").result, (0, 1))
    b_first = Observation(both_print("a\n", "b\n").result, (1, 0))
    quotes = {"ranks": {"0": {"stdout": "a\n"}, "1": {"stdout": "b\n"}}}
    assert claim_problems(Outcome.model_validate(quotes), [a_first, b_first]) == []
    fixed = Outcome.model_validate({**quotes, "order_varies": False})
    assert claim_problems(fixed, [a_first, b_first]) == [
        "which rank prints first varied between runs ([(0, 1), (1, 0)]), but the claim is a "
        "fixed order (order_varies: false)"
    ]
    assert claim_problems(fixed, [a_first, a_first]) == []


def test_a_rank_that_does_not_exist_makes_a_claim_false():
    outcome = Outcome.model_validate(says("3", stdout="x\n"))
    assert claim_problems(outcome, SUM_RUNS) == [
        "runs 1, 2, 3: rank 3 does not exist in a run of 2 rank(s)"
    ]


def test_a_debug_failure_may_name_only_the_failing_rank():
    boom = ExceptionInfo(type="RuntimeError", message="peer went away")
    failed = run(rank(0, "ok\n"), rank(1, status="error", exception=boom), status="error")
    item = debug_item(failure=says("1", exception="RuntimeError"))
    assert judge(item, [failed] * 3).verdict is Verdict.PASS


@pytest.mark.parametrize(
    "outcome",
    [{}, {"order_varies": True}, {"ranks": {}}, {"ranks": {"0": {}}}],
    ids=["empty", "order-allowed-only", "no-ranks", "empty-rank"],
)
def test_an_outcome_that_states_nothing_is_refused(outcome):
    with pytest.raises(ValidationError, match="states nothing"):
        Outcome.model_validate(outcome)


def test_run_level_claims_alone_state_something():
    assert Outcome.model_validate({"hangs": False}).hangs is False
    assert Outcome.model_validate({"order_varies": False}).order_varies is False

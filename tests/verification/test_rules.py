"""Judging keys against observed runs, with no executor: observations are built by hand."""

from __future__ import annotations

from app.challenges.schema import DebugItem, Outcome, PredictOutputItem
from app.verification.rules import (
    Observation,
    Verdict,
    judge,
    judge_proof,
    normalise,
    stdout_matches,
)
from executor.contract import Environment, ExceptionInfo, RankResult, RunResult
from tests.support.items import debug_item, predict_item

ENV = Environment(torch="2.13.0+cpu", backend="gloo", device="cpu", nproc=2, python="3.11.7")


def run(*stdouts: str, status: str = "ok", exception: ExceptionInfo | None = None) -> RunResult:
    ranks = [
        RankResult(
            rank=i,
            status="ok" if status == "ok" else "error",
            exit_code=0,
            stdout=text,
            exception=exception if i == 1 else None,
        )
        for i, text in enumerate(stdouts)
    ]
    return RunResult(status=status, duration_ms=90, ranks=ranks, environment=ENV)


def predict(options: list[dict], answer: str = "A") -> PredictOutputItem:
    return predict_item(options=options, answer=answer)


def debug(failure: dict) -> DebugItem:
    return debug_item(failure=failure)


def rank_outcome(**ranks: str) -> dict:
    return {"ranks": {key.removeprefix("r"): {"stdout": text} for key, text in ranks.items()}}


def test_trailing_whitespace_and_blank_lines_do_not_count():
    assert normalise("a  \nb\n\n") == "a\nb"


def test_a_key_that_matches_every_run_passes():
    item = predict(
        [
            {"id": "A", "text": "1", "outcome": rank_outcome(rall="1\n")},
            {"id": "B", "text": "2", "outcome": rank_outcome(rall="2\n")},
        ]
    )
    report = judge(item, [Observation(run("1\n", "1\n"), (0, 1))] * 3)
    assert report.verdict is Verdict.PASS and report.problems == []


def test_a_wrong_key_fails_and_says_what_was_printed():
    item = predict(
        [
            {"id": "A", "text": "1", "outcome": rank_outcome(rall="1\n")},
            {"id": "B", "text": "2", "outcome": rank_outcome(rall="2\n")},
        ]
    )
    report = judge(item, [Observation(run("2\n", "2\n"))])
    assert report.verdict is Verdict.FAIL
    assert "rank 0 printed '2\\n', expected '1\\n'" in report.problems[0]
    assert any("distractor B also matches" in problem for problem in report.problems)


def test_a_key_without_an_outcome_cannot_be_proven():
    item = predict([{"id": "A", "text": "1"}, {"id": "B", "text": "2"}])
    report = judge(item, [Observation(run("1\n", "1\n"))])
    assert report.verdict is Verdict.FAIL
    assert "no outcome to verify" in report.problems[0]


def test_a_predict_output_distractor_without_an_outcome_cannot_be_shown_false():
    item = predict(
        [
            {"id": "A", "text": "1", "outcome": rank_outcome(rall="1\n")},
            {"id": "B", "text": "something else"},
        ]
    )
    report = judge(item, [Observation(run("1\n", "1\n"))])
    assert report.verdict is Verdict.FAIL
    assert report.problems == ["option B has no outcome: verify cannot show that it is false"]


def test_rank_order_that_varies_is_noted_and_fails_only_a_claimed_fixed_order():
    outcome = rank_outcome(r0="a\n", r1="b\n")
    item = predict(
        [
            {"id": "A", "text": "a then b", "outcome": outcome},
            {"id": "B", "text": "x", "outcome": rank_outcome(r0="x\n")},
        ]
    )
    observations = [Observation(run("a\n", "b\n"), (0, 1)), Observation(run("a\n", "b\n"), (1, 0))]
    report = judge(item, observations)
    assert report.verdict is Verdict.PASS
    assert "the key makes no claim about order" in report.notes[-1]
    fixed = predict(
        [
            {"id": "A", "text": "a", "outcome": {**outcome, "order_varies": False}},
            {"id": "B", "text": "x", "outcome": rank_outcome(r0="x\n")},
        ]
    )
    assert "order_varies: false" in judge(fixed, observations).problems[-1]
    declared = predict(
        [
            {"id": "A", "text": "a", "outcome": {**outcome, "order_varies": True}},
            {"id": "B", "text": "x", "outcome": rank_outcome(r0="x\n")},
        ]
    )
    assert judge(declared, observations).verdict is Verdict.PASS


def test_rank_order_does_not_matter_when_every_rank_prints_the_same():
    item = predict(
        [
            {"id": "A", "text": "same", "outcome": rank_outcome(rall="same\n")},
            {"id": "B", "text": "x", "outcome": rank_outcome(r0="x\n")},
        ]
    )
    observations = [
        Observation(run("same\n", "same\n"), (0, 1)),
        Observation(run("same\n", "same\n"), (1, 0)),
    ]
    assert judge(item, observations).verdict is Verdict.PASS


def test_unseeded_output_cannot_be_keyed_as_fixed_text():
    item = predict(
        [
            {"id": "A", "text": "r", "outcome": rank_outcome(r0="0.1\n")},
            {"id": "B", "text": "x", "outcome": rank_outcome(r0="x\n")},
        ]
    )
    report = judge(item, [Observation(run("0.1\n")), Observation(run("0.7\n"))])
    assert any("varies between runs" in problem for problem in report.problems)
    regex = predict(
        [
            {"id": "A", "text": "r", "outcome": {"ranks": {"0": {"stdout_regex": r"0\.\d"}}}},
            {"id": "B", "text": "x", "outcome": rank_outcome(r0="x\n")},
        ]
    )
    assert (
        judge(regex, [Observation(run("0.1\n")), Observation(run("0.7\n"))]).verdict is Verdict.PASS
    )


def test_a_debug_item_must_observe_the_claimed_exception_on_the_claimed_rank():
    item = debug({"ranks": {"1": {"exception": "RuntimeError", "message_regex": "size"}}})
    boom = ExceptionInfo(type="RuntimeError", message="size mismatch")
    assert (
        judge(item, [Observation(run("", "", status="error", exception=boom))]).verdict
        is Verdict.PASS
    )
    other = ExceptionInfo(type="ValueError", message="size")
    failing = judge(item, [Observation(run("", "", status="error", exception=other))])
    assert "rank 1 raised ValueError, expected RuntimeError" in failing.problems[0]
    assert judge(item, [Observation(run("", ""))]).verdict is Verdict.FAIL


def test_a_claimed_hang_must_time_out_and_a_hang_must_be_claimed():
    hang = {"hangs": True}
    item = predict(
        [
            {"id": "A", "text": "hangs", "outcome": hang},
            {"id": "B", "text": "prints", "outcome": rank_outcome(rall="done\n")},
        ]
    )
    blocked = run("", "", status="timeout")
    proven = [Observation(blocked), Observation(blocked, long_limit=True)]
    assert judge(item, proven).verdict is Verdict.PASS
    unproven = judge(item, [Observation(blocked)])
    assert "no longer re-run proved that it hangs" in unproven.problems[0]
    finished = judge(item, [Observation(run("done\n", "done\n"))])
    assert "expected a hang" in finished.problems[0]
    assert any("distractor B also matches" in p for p in finished.problems)


def test_rank_order_is_only_claimed_by_an_outcome_that_quotes_output():
    item = debug({"hangs": True})
    blocked = run("a\n", "b\n", status="timeout")
    runs = [Observation(blocked, (0, 1)), Observation(blocked, (1, 0), long_limit=True)]
    assert judge(item, runs).verdict is Verdict.PASS


def _regex_item(key_regex: str, other: str) -> PredictOutputItem:
    return predict(
        [
            {"id": "A", "text": "k", "outcome": {"ranks": {"0": {"stdout_regex": key_regex}}}},
            {
                "id": "B",
                "text": "d",
                "outcome": {"ranks": {"0": {"stdout_regex": other}}},
            },
        ]
    )


def test_a_stdout_regex_may_end_with_the_newline_print_writes():
    runs = [Observation(run("loss 0.25\n")), Observation(run("loss 0.31\n"))]
    assert judge(_regex_item(r"loss 0\.\d+\n", r"loss 1\.\d+\n"), runs).verdict is Verdict.PASS
    assert judge(_regex_item(r"loss 0\.\d+", r"loss 1\.\d+"), runs).verdict is Verdict.PASS
    # Two lines: the last newline is optional, the one between lines is not.
    two = [Observation(run("a\nb\n"))]
    assert judge(_regex_item(r"a\nb\n", r"b\na\n"), two).verdict is Verdict.PASS
    assert judge(_regex_item(r"ab", r"a\nb"), two).verdict is Verdict.FAIL


def test_a_distractor_whose_regex_with_a_newline_describes_the_output_is_true():
    runs = [Observation(run("rank 0\n"))]
    report = judge(_regex_item(r"rank \d", r"rank 0\n"), runs)
    assert report.verdict is Verdict.FAIL
    assert any("B" in problem for problem in report.problems)


def test_a_stdout_regex_still_matches_the_whole_output():
    runs = [Observation(run("rank 0\nrank 1\n"))]
    assert judge(_regex_item(r"rank \d\nrank \d\n", r"rank 0\n"), runs).verdict is Verdict.PASS
    # The output ends in exactly what the regex says: no implicit newline is added before it.
    assert stdout_matches(r"x\n", "x\n\n") and not stdout_matches(r"x\n\n\n", "x\n")
    assert not stdout_matches(r"\n", "")


def test_a_proof_holds_when_what_it_states_holds_in_every_run_even_about_one_rank():
    about_rank_one = Outcome.model_validate(rank_outcome(r1="sum 3\n"))
    runs = [Observation(run("partial 1\n", "sum 3\n"), (0, 1))] * 3
    report = judge_proof("proof rank-one", about_rank_one, runs)
    assert report.verdict is Verdict.PASS and report.problems == []


def test_a_proof_that_one_run_contradicts_fails_naming_the_run():
    claim = Outcome.model_validate(rank_outcome(rall="3\n"))
    runs = [Observation(run("3\n", "3\n"), (0, 1)), Observation(run("3\n", "4\n"), (0, 1))]
    report = judge_proof("proof sum", claim, runs)
    assert report.verdict is Verdict.FAIL
    assert report.problems[0] == "proof: run 2: rank 1 printed '4\\n', expected '3\\n'"

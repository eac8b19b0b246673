"""Staff previews say outcomes and numbers in plain words, never as Python reprs."""

from __future__ import annotations

from app.challenges.base import Outcome
from app.challenges.outcome_text import number, outcome


def test_a_number_reads_as_the_author_wrote_it():
    assert number(1002.0) == "1002"
    assert number(1002) == "1002"
    assert number(3.333) == "3.333"
    assert number(0.25) == "0.25"
    assert number(-2.0) == "-2"


def test_an_outcome_reads_as_sentences_rank_by_rank():
    claimed = Outcome.model_validate(
        {
            "hangs": True,
            "ranks": {
                "1": {"stdout": "1002\n"},
                "0": {"status": "hangs"},
                "all": {"exception": "RuntimeError", "message_regex": "closed"},
            },
            "order_varies": True,
        }
    )
    assert outcome(claimed) == [
        "the run hangs",
        "every rank raises RuntimeError, with a message matching /closed/",
        "rank 0 hangs",
        "rank 1 prints 1002",
        "which rank prints first may vary between runs",
    ]


def test_exit_codes_comparisons_and_multi_line_output_are_spelled_out():
    claimed = Outcome.model_validate(
        {
            "hangs": False,
            "ranks": {
                "0": {"stdout": "a\nb\n", "differs_across_ranks": True, "exit_code": 3},
                "1": {"stdout_regex": "b.*", "varies_between_runs": False},
            },
        }
    )
    assert outcome(claimed) == [
        "the run ends, no rank blocked",
        "rank 0 prints a ⏎ b, exits with code 3, prints something different from every other rank",
        "rank 1 prints output matching /b.*/, prints the same on every run",
    ]

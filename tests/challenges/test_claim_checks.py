"""Validate warns where an option's text names a rank or an outcome its outcome leaves open."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges import loader
from app.challenges.claim_checks import unclaimed
from app.challenges.schema import Outcome
from app.cli import main
from app.config import ROOT


def warnings(text: str, outcome: dict, nproc: int = 2) -> list[str]:
    return list(unclaimed(text, Outcome.model_validate(outcome), nproc))


ZERO_PRINTS = {"ranks": {"0": {"stdout": "3.0\n"}}}


@pytest.mark.parametrize(
    "text",
    [
        "Rank 1 prints `sum 3.0`.",
        "Rank 0 prints 3.0 and rank 1 prints 2.0",
        "`3.0` on rank 0, `2.0` on rank 1",
        "Ranks 0 and 1 both print 3.0",
        "3.0 on ranks 0-1",
    ],
)
def test_a_rank_the_text_names_but_the_outcome_leaves_out_is_warned(text):
    assert "the text names rank 1, but the outcome says nothing about rank 1" in warnings(
        text, ZERO_PRINTS
    )


@pytest.mark.parametrize("text", ["Both ranks print 3.0", "It prints 3.0 on every rank"])
def test_every_rank_in_the_text_needs_all_or_each_rank(text):
    assert warnings(text, ZERO_PRINTS) == [
        "the text names every rank, but the outcome claims only rank(s) 0 (give all, or each rank)"
    ]
    assert warnings(text, {"ranks": {"all": {"stdout": "3.0\n"}}}) == []
    each = {"ranks": {"0": {"stdout": "3.0\n"}, "1": {"stdout": "3.0\n"}}}
    assert warnings(text, each) == []


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("Rank 0 prints 3.0, then it hangs", "hangs"),
        ("Rank 0 prints 3.0 and deadlocks", "deadlocks"),
        ("Rank 0 prints 3.0; rank 0 then raises `RuntimeError`", "raises"),
    ],
)
def test_an_outcome_word_the_outcome_does_not_constrain_is_warned(text, word):
    # With hangs: true, printing no longer implies that rank 0 returns: its end is open.
    found = warnings(text, {"hangs": True, "ranks": {"0": {"stdout_regex": "3.0"}}})
    assert any(f"the text says {word!r}" in message for message in found), found


def test_a_word_is_judged_for_the_rank_it_is_said_of():
    outcome = {"ranks": {"0": {"stdout": "3.0\n"}, "1": {"status": "returns"}}}
    assert warnings("Rank 0 prints 3.0 and rank 1 finishes", outcome) == []
    assert warnings("Rank 0 finishes and rank 1 prints 3.0", outcome) == [
        "the text says 'prints' of rank 1, but the outcome does not constrain what rank 1 "
        "prints (stdout:, stdout_regex:, stderr_regex:, differs_across_ranks:)"
    ]


def test_a_run_level_word_is_covered_by_a_run_level_claim():
    assert warnings("It deadlocks", {"hangs": True}) == []
    assert warnings("It does not hang", {"hangs": False}) == []
    assert warnings("It hangs", {"ranks": {"0": {"stdout_regex": "x"}}, "hangs": True}) == []
    assert warnings("It hangs", {"order_varies": False}) != []


def test_code_spans_and_values_are_not_read_as_claims():
    outcome = {"ranks": {"all": {"stdout": "x\n"}}}
    assert (
        warnings("Every rank runs `raise ValueError`, `print(rank 1)` and prints x", outcome) == []
    )
    assert (
        warnings(
            "`tensor([1.])` on rank 0, 2.0 on rank 1",
            {"ranks": {"0": {"stdout": "1\n"}, "1": {"stdout": "2\n"}}},
        )
        == []
    )


def test_a_rank_beyond_the_world_is_not_a_rank_of_this_run():
    assert warnings("like rank 5 would", ZERO_PRINTS, nproc=2) == []


def test_validate_prints_warnings_at_the_option_and_counts_them_apart_from_errors(
    tmp_path: Path, capsys
):
    folder = tmp_path / "claims"
    shutil.copytree(ROOT / "tests" / "fixtures" / "claims", folder)
    set_file = folder / "set.yaml"
    set_file.write_text(
        set_file.read_text().replace("text: Rank 0 finishes.", "text: Rank 1 hangs.")
    )
    report = loader.load_path(folder)
    assert report.ok and report.errors == []
    (warning,) = report.warnings
    line = set_file.read_text().splitlines().index("        text: Rank 1 hangs.") + 1
    assert (warning.line, warning.message) == (
        line,
        "warning: option B: the text names rank 1, but the outcome says nothing about rank 1",
    )
    # The two-item fixture breaks the course's rules (guessing, facts): validate reports them
    # as errors (app.challenges.course_rules); the claim warning stays a warning beside them.
    assert main(["validate", str(folder)]) == 1
    output = capsys.readouterr()
    assert output.out.rstrip().endswith("4 error(s), 1 warning(s)")
    assert f"{set_file}:{line}:9: warning: option B" in output.err
    assert f"set.yaml:{line}:9: warning: option B" in output.err


def test_an_outcome_that_states_nothing_is_an_error_at_its_line(tmp_path: Path):
    folder = tmp_path / "claims"
    shutil.copytree(ROOT / "tests" / "fixtures" / "claims", folder)
    set_file = folder / "set.yaml"
    text = set_file.read_text()
    set_file.write_text(text.replace('"0": {status: returns}', '"0": {}'))
    report = loader.load_path(folder)
    assert not report.ok
    assert any("states nothing" in error.message for error in report.errors), report.errors


def test_an_unclosed_backtick_hides_nothing_and_a_long_text_is_read_to_its_limit():
    assert warnings("`x rank 1 prints 3.0", ZERO_PRINTS) == [
        "the text names rank 1, but the outcome says nothing about rank 1"
    ]
    assert warnings("`a` " * 2000 + "rank 1 prints 3.0", ZERO_PRINTS) == []  # past 4,000

"""Errors for humans: one broken file per error class (tests/fixtures/broken/<class>/), each
reported at the exact line:col of the offending value, in plain words that say the fix."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.challenges.loader import load_path
from app.config import ROOT
from tests.conftest import FIXTURES

BROKEN = FIXTURES / "broken"

# (folder, where the error must be, words it must contain)
CASES = [
    ("wrong-type", "set.yaml:15:21", "nproc must be a whole number (from 1 to 8), not 'two'"),
    ("out-of-range", "set.yaml:15:21", "nproc is 9: use a value from 1 to 8"),
    ("unknown-field", "set.yaml:16:5", "unknown field 'explenation': did you mean 'explanation'?"),
    ("unknown-kind", "set.yaml:9:11",
     "unknown kind 'predict_ouput'; did you mean 'predict_output'? "
     "(kinds here: choice, predict_output, debug or numeric)"),
    ("unknown-status", "set.yaml:20:41",
     "status 'hang' is not allowed: use returns, raises, hangs or killed; did you mean 'hangs'?"),
    ("unclosed-quote", "set.yaml:19:15",
     "a quoted string opened at 19:15 is never closed on its line (it runs on to line 20): "
     "add its closing quote"),
    ("duplicate-item", "set.yaml:25:9",
     "item id 'all-reduce' is already used at line 8: give this one another id"),
    ("duplicate-option", "set.yaml:21:13",
     "option id 'A' is already used at line 18: give this one another id"),
    ("duplicate-card", "topic.yaml:12:9",
     "card id 'world-size' is already used at line 6: give this one another id"),
    ("duplicate-step", "lab.yaml:36:9",
     "step id 'print-rank' is already used at line 7: give this one another id"),
    ("bad-answer", "set.yaml:24:13", "answer 'D' names no option (this item's options are A, B)"),
    ("rank-beyond-nproc", "set.yaml:23:51",
     "rank 2 does not exist: this snippet starts 2 ranks (numbered 0 to 1, launch.nproc): "
     "name a lower rank or raise nproc"),
    ("inline-syntax", "set.yaml:21:12", "Python cannot compile this snippet: '(' was never closed"),
    ("snippet-syntax", "all_reduce.py:7:6",
     "Python cannot compile this snippet: '(' was never closed (the code_file of set.yaml:14)"),
]  # fmt: skip


@pytest.mark.parametrize(("folder", "where", "words"), CASES, ids=[case[0] for case in CASES])
def test_each_broken_file_is_one_plain_error_at_the_offending_value(
    folder: str, where: str, words: str
) -> None:
    report = load_path(BROKEN / folder, display_root=BROKEN)
    assert [str(error) for error in report.errors] == [f"{folder}/{where}: {words}"]
    assert report.sets == report.topics == report.labs == []


def test_no_error_is_pydantic_s_or_the_parser_s_own_text() -> None:
    report = load_path(BROKEN, display_root=BROKEN)
    assert len(report.errors) == len(CASES)
    for error in report.errors:
        assert not any(
            library in error.message
            for library in ("Input should", "Field required", "Extra inputs", "Value error",
                            "expected <block end>", "while parsing")
        ), error  # fmt: skip


def ranklab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def test_validate_refuses_a_python_file_and_says_what_to_run() -> None:
    snippet = BROKEN / "snippet-syntax" / "all_reduce.py"
    result = ranklab("validate", str(snippet))
    assert result.returncode == 2
    assert f"{snippet} is not a YAML file: validate reads challenge folders" in result.stderr
    assert f"`ranklab verify {snippet.parent}` runs the snippets" in result.stderr


def test_validate_names_the_folder_it_read_and_what_it_found() -> None:
    result = ranklab("validate", str(BROKEN / "bad-answer"))
    assert result.returncode == 1
    assert result.stdout.strip() == (
        f"read {BROKEN / 'bad-answer'}/ (1 file(s): 0 valid set(s), 0 topic(s), 0 lab(s), "
        "0 item(s)): 1 error(s)"
    )
    assert result.stderr.strip().endswith("bad-answer/set.yaml:24:13: answer 'D' names no option "
                                          "(this item's options are A, B)")  # fmt: skip

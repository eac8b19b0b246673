"""A numeric item may name a snippet whose printed value is its answer: `ranklab verify` runs it on
real ranks and fails the key when the value printed is not the answer (within the tolerance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.challenges import loader
from tests.verification.test_verify_cli import json_records, verify

SNIPPET = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()}: sum {t.item()}")
dist.destroy_process_group()
"""

ITEM = """\
  - id: {id}
    kind: numeric
    category: Predict Output
    difficulty: beginner
    title: Sum of three ranks
    prompt: What sum does this rank print?
{source}
    launch: {launch}
    printed: {printed}
    answer: {answer}
    tolerance: {tolerance}
    explanation: "1 + 2 + 3 = 6, printed as 6.0."
"""


def write_set(folder: Path, *items: dict[str, str]) -> Path:
    """A set of numeric items, each a dict of ITEM's fields, with the sum snippet beside it."""
    (folder / "sum_ranks.py").write_text(SNIPPET)
    head = (
        "id: numeric-printed\ntitle: Printed numbers\ntopic: collectives\n"
        "description: Numbers read from a run.\nbadge: {name: Printed}\nitems:\n"
    )
    defaults = {
        "source": "    code_file: sum_ranks.py",
        "launch": "{nproc: 3, backend: gloo}",
        "tolerance": "0",
    }
    body = "".join(ITEM.format(**{**defaults, **item}) for item in items)
    path = folder / "set.yaml"
    path.write_text(head + body)
    return path


@pytest.mark.executor
def test_verify_passes_a_right_numeric_key_and_fails_a_wrong_one_on_real_ranks(
    tmp_path, executor_url
):
    write_set(
        tmp_path,
        {"id": "right-sum", "printed": "{rank: 2, regex: 'sum ([-\\d.]+)'}", "answer": "6"},
        {
            "id": "wrong-sum",
            "printed": "{rank: 0, regex: 'sum ([-\\d.]+)'}",
            "answer": "5.9",
            "tolerance": "0.05",
        },
        {
            "id": "whole-output",
            "source": "    code: |\n      print(0.1 + 0.2)",
            "launch": "{nproc: 1}",
            "printed": "{}",
            "answer": "0.3",
            "tolerance": "0.001",
        },
    )
    result = verify(tmp_path, executor_url, "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    *records, summary = json_records(result.stdout)
    by_id = {record["item_id"]: record for record in records}
    assert by_id["right-sum"]["verdict"] == "pass", by_id["right-sum"]
    assert by_id["whole-output"]["verdict"] == "pass", by_id["whole-output"]
    wrong = by_id["wrong-sum"]
    assert wrong["verdict"] == "fail"
    assert wrong["reasons"] == [
        f"run {n}: rank 0 printed 6.0, but the answer is 5.9 ± 0.05" for n in (1, 2, 3)
    ]
    assert summary["counts"] == {"pass": 2, "fail": 1}


@pytest.mark.executor
def test_a_value_the_rank_does_not_print_fails_with_what_it_printed(tmp_path, executor_url):
    write_set(
        tmp_path,
        {"id": "no-match", "printed": "{rank: 1, regex: 'loss ([-\\d.]+)'}", "answer": "6"},
    )
    result = verify(tmp_path, executor_url)
    assert result.returncode == 1
    assert "FAIL" in result.stdout and "no-match" in result.stdout
    assert "run 1: rank 1 printed 'rank 1: sum 6.0\\n', nothing matching /loss ([-\\d.]+)/" in (
        result.stdout
    ), result.stdout


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"source": "", "printed": "{rank: 0}", "answer": "6"},
            "printed: needs the snippet that prints the value: code or code_file",
        ),
        (
            {"printed": "{rank: 3}", "answer": "6"},
            "printed.rank 3 does not exist in a run of 3 rank(s)",
        ),
        (
            {"printed": "{regex: '(sum) ([-\\d.]+)'}", "answer": "6"},
            "printed.regex needs exactly one group, around the number (it has 2)",
        ),
        (
            {"printed": "{regex: 'sum ('}", "answer": "6"},
            "printed.regex is not a regular expression",
        ),
    ],
)
def test_validate_refuses_a_printed_value_verify_could_not_read(tmp_path, fields, message):
    write_set(tmp_path, {"id": "broken", **fields})
    report = loader.load_path(tmp_path)
    assert len(report.errors) == 1, [str(error) for error in report.errors]
    error = report.errors[0]
    assert message in error.message, error.message
    assert error.line > 6  # at the item, not at the top of the file


def test_a_topic_refuses_a_printed_numeric_item_it_would_never_run(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    item = ITEM.format(
        id="printed-in-topic",
        source="    code: print(6)",
        launch="{nproc: 1}",
        printed="{}",
        answer="6",
        tolerance="0",
    )
    (folder / "topic.yaml").write_text("id: demo\ntitle: Demo\nsummary: A topic.\nitems:\n" + item)
    report = loader.load_path(tmp_path)
    assert [error.message for error in report.errors] == [
        "Value error, item(s) ['printed-in-topic'] have `printed:`: a numeric item proven by a "
        "run belongs in a set"
    ]

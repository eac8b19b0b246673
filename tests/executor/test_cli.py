"""`ranklab run` and `ranklab executor` through executor.cli.main."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executor import cli

SNIPPET = (
    "import torch, torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "rank = dist.get_rank()\n"
    "t = torch.tensor([rank + 1])\n"
    "dist.all_reduce(t)\n"
    "print(f'rank {rank}: {t.item()}')\n"
    "if rank == 1:\n"
    "    raise RuntimeError('rank 1 gives up')\n"
)


@pytest.mark.executor
def test_run_json_gives_the_true_per_rank_result_and_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    args = ["run", str(snippet), "--nproc", "2", "--json", "--timeout", "20"]
    code = cli.main(args)
    result = json.loads(capsys.readouterr().out)
    if result["status"] == "rejected":  # this machine cannot sandbox: refused, exit 3...
        assert code == cli.INFRASTRUCTURE_ERROR
        assert "refusing to run untrusted code" in result["message"]
        code = cli.main([*args, "--trusted"])  # ...and an explicit opt-in runs it
        result = json.loads(capsys.readouterr().out)
    assert code == 0, result  # a failing snippet is data, not a CLI failure
    assert result["status"] == "error"
    assert [r["stdout"] for r in result["ranks"]] == ["rank 0: 3\n", "rank 1: 3\n"]
    assert result["ranks"][1]["exception"] == {
        "type": "RuntimeError",
        "module": "builtins",
        "bases": ["Exception", "BaseException"],
        "message": "rank 1 gives up",
    }


def test_render_shows_each_rank_with_status_and_output() -> None:
    from executor.contract import RunResult

    result = RunResult.model_validate(
        {
            "status": "error",
            "duration_ms": 97,
            "environment": {
                "torch": "2.13.0+cpu",
                "backend": "gloo",
                "device": "cpu",
                "nproc": 2,
                "python": "3.11.7",
            },
            "ranks": [
                {"rank": 0, "status": "ok", "exit_code": 0, "stdout": "hi\n"},
                {
                    "rank": 1,
                    "status": "error",
                    "exit_code": 1,
                    "stderr": "Traceback...\n",
                    "exception": {"type": "ValueError", "message": "no"},
                },
            ],
        }
    )
    text = cli.render(result)
    assert "status: error  (97 ms)" in text
    assert "--- rank 0: ok (exit 0)" in text
    assert "--- rank 1: error (exit 1) ValueError: no" in text
    assert "[stderr]\nTraceback..." in text


def test_a_missing_snippet_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "/nonexistent/snippet.py", "--nproc", "2"]) == cli.USAGE_ERROR
    assert "cannot read" in capsys.readouterr().err


def test_nproc_out_of_range_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text("print(1)\n")
    assert cli.main(["run", str(snippet), "--nproc", "64"]) == cli.USAGE_ERROR
    assert "nproc must be between 1 and 8 (got 64)" in capsys.readouterr().err


def test_unknown_arguments_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run"]) == cli.USAGE_ERROR
    assert cli.main(["executor"]) == cli.USAGE_ERROR
    capsys.readouterr()

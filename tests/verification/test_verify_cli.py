"""`ranklab verify` against a real executor: green on the shipped content, red on a wrong key."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.config import ROOT

pytestmark = pytest.mark.executor


def verify(path: Path, executor_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "verify", str(path), "--executor", executor_url],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_every_shipped_key_is_proven(executor_url):
    result = verify(ROOT / "challenges", executor_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout
    assert result.stdout.count("PASS ") >= 5


def test_a_copy_with_one_wrong_key_fails_with_the_observed_output(executor_url, tmp_path):
    copy = tmp_path / "ddp-mastery"
    shutil.copytree(ROOT / "challenges" / "ddp-mastery", copy)
    set_file = copy / "set.yaml"
    text = set_file.read_text()
    start = text.index("id: ddp-forward-output")
    answer_at = text.index("    answer: A", start)
    set_file.write_text(
        text[:answer_at] + "    answer: B" + text[answer_at + len("    answer: A") :]
    )
    result = verify(set_file, executor_url)
    assert result.returncode == 1
    assert "FAIL " in result.stdout and "ddp-forward-output" in result.stdout
    assert "key B:" in result.stdout and "distractor A also matches" in result.stdout
    assert "rank 0: ok" in result.stdout  # the evidence
    assert "PASS " in result.stdout  # the other executable item still passes


def test_an_item_needing_gpus_is_reported_not_passed_or_failed(executor_url, tmp_path):
    set_file = tmp_path / "gpu.yaml"
    set_file.write_text(
        (ROOT / "challenges/multi-gpu-master/set.yaml")
        .read_text()
        .replace("      gpus: 0", "      gpus: 2", 1)
    )
    shutil.copy(ROOT / "challenges/multi-gpu-master/dataparallel_shape.py", tmp_path)
    shutil.copy(ROOT / "challenges/multi-gpu-master/state_dict_prefix.py", tmp_path)
    result = verify(set_file, executor_url)
    assert result.returncode == 0, result.stdout
    assert "GPU " in result.stdout and "needs 2 GPU(s); this executor has 0" in result.stdout

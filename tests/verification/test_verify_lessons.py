"""`ranklab verify` proves each lesson example's shown output on real ranks, as it proves a key:
a lesson showing output the ranks do not print fails, with what they printed."""

from __future__ import annotations

import shutil

import pytest

from app.challenges import loader
from app.verification import proofs
from tests.conftest import FIXTURES
from tests.support.content import edit
from tests.verification.test_verify_cli import verify

pytestmark = pytest.mark.executor


def test_a_lesson_whose_shown_output_is_wrong_fails_and_a_true_one_passes(executor_url, tmp_path):
    folder = tmp_path / "lessons"
    shutil.copytree(FIXTURES / "lessons", folder)
    topic = folder / "topic.yaml"
    edit(topic, '"1": "rank 1: 3.0\\n"', '"1": "rank 1: 4.0\\n"')  # what the lesson shows: false
    proofs_file = folder / proofs.FILE_NAME
    result = verify(folder, executor_url, "--proofs", str(proofs_file))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert f"FAIL {topic} lesson example typed-sum" in lines, result.stdout
    assert any(
        "rank 1 printed 'rank 1: 3.0\\n', expected 'rank 1: 4.0\\n'" in line for line in lines
    ), result.stdout
    assert f"PASS {topic} lesson example chosen-sum" in lines
    written = proofs.load(proofs_file)
    assert {key: proof.verdict for key, proof in written.items()} == {
        "topic:lesson-drill:lesson:typed-sum": "fail",
        "topic:lesson-drill:lesson:chosen-sum": "pass",
    }
    loaded = loader.load_path(folder)
    current = proofs.current_hashes(loaded.sets, loaded.labs, loaded.topics)
    assert all(written[key].hash == current[key] for key in written)

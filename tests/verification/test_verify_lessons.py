"""`ranklab verify` proves each lesson example's shown output on real ranks, as it proves a key:
a lesson showing output the ranks do not print fails, with what they printed; so does one that
says a rank hangs or raises when it does not (or leaves out that it does)."""

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
    assert f"PASS {topic} lesson example hung-ranks" in lines
    assert f"PASS {topic} lesson example raising-rank" in lines
    # The hang is proven from the ranks' stacks in the run itself, not by a long re-run.
    assert "hang proven by the ranks' stacks" in result.stdout, result.stdout
    written = proofs.load(proofs_file)
    assert {key: proof.verdict for key, proof in written.items()} == {
        "topic:lesson-drill:lesson:typed-sum": "fail",
        "topic:lesson-drill:lesson:chosen-sum": "pass",
        "topic:lesson-drill:lesson:hung-ranks": "pass",
        "topic:lesson-drill:lesson:raising-rank": "pass",
    }
    loaded = loader.load_path(folder)
    current = proofs.current_hashes(loaded.sets, loaded.labs, loaded.topics)
    assert all(written[key].hash == current[key] for key in written)


def test_a_lesson_wrong_about_how_a_rank_ends_fails(executor_url, tmp_path):
    folder = tmp_path / "lessons"
    shutil.copytree(FIXTURES / "lessons", folder)
    topic = folder / "topic.yaml"
    edit(topic, "          ends:\n            all: {status: hangs}\n", "")  # "both end normally"
    edit(topic, "exception: RuntimeError", "exception: ValueError")  # the wrong exception
    result = verify(folder, executor_url)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert f"FAIL {topic} lesson example hung-ranks" in lines, result.stdout
    assert f"FAIL {topic} lesson example raising-rank" in lines, result.stdout
    assert "but the claim is that it ends (hangs: false)" in result.stdout
    assert "rank 1 raised RuntimeError, expected ValueError" in result.stdout

"""`ranklab verify --item` and incremental verify, against a real executor."""

from __future__ import annotations

import json
import shutil

import pytest

from app.verification import proofs
from tests.conftest import TEST_CHALLENGES
from tests.verification.test_verify_cli import verify

pytestmark = pytest.mark.executor


def test_a_proven_unchanged_item_is_skipped_until_edited_or_all(executor_url, tmp_path):
    folder = tmp_path / "course"
    shutil.copytree(TEST_CHALLENGES / "runs", folder / "runs")
    proofs_file = folder / proofs.FILE_NAME
    first = verify(folder, executor_url, "--proofs", str(proofs_file), "--repeats", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "PASS" in first.stdout and "skipped" not in first.stdout
    assert json.loads(proofs_file.read_text())["backend"] == "gloo"

    again = verify(folder, executor_url, "--proofs", str(proofs_file), "--repeats", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 proven and unchanged, skipped" in again.stdout and "PASS" not in again.stdout

    forced = verify(folder, executor_url, "--proofs", str(proofs_file), "--repeats", "1", "--all")
    assert "PASS" in forced.stdout and "skipped" not in forced.stdout

    set_file = folder / "runs" / "set.yaml"
    set_file.write_text(set_file.read_text().replace("explanation:", "explanation: Edited.", 1))
    edited = verify(folder, executor_url, "--proofs", str(proofs_file), "--repeats", "1")
    assert "PASS" in edited.stdout and "skipped" not in edited.stdout


def test_item_runs_only_the_items_named_and_refuses_an_unknown_one(executor_url, tmp_path):
    folder = tmp_path / "course"
    shutil.copytree(TEST_CHALLENGES, folder)
    picked = verify(folder, executor_url, "--item", "all-reduce", "--repeats", "1", "--json")
    assert picked.returncode == 0, picked.stdout + picked.stderr
    items = [r["item_id"] for r in map(json.loads, picked.stdout.splitlines()) if "item_id" in r]
    assert items == ["all-reduce"]
    unknown = verify(folder, executor_url, "--item", "all-reduse")
    assert unknown.returncode == 2
    assert "no item, set or lab 'all-reduse'" in unknown.stderr
    assert "did you mean 'all-reduce'?" in unknown.stderr

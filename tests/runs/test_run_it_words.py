"""Run it speaks of the ranks the snippet runs on in plain words: one rank is "one real rank" and
"its output", not "1 real rank" and "each one's output"."""

from __future__ import annotations

import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from tests.conftest import TEST_CHALLENGES
from tests.support.content import edit
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner


def one_rank_course(tmp_path: Path) -> Path:
    """The test content, its Run-it item launched on one rank."""
    folder = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, folder)
    item = folder / "runs" / "set.yaml"
    edit(item, "launch: {nproc: 2,", "launch: {nproc: 1,")
    edit(item, '{ranks: {"0": {stdout: "0.0\\n"}, "1": {stdout: "1.0\\n"}}}', "")
    edit(item, "outcome: \n", 'outcome: {ranks: {"0": {stdout: "0.0\\n"}}}\n')
    return folder


def test_run_it_on_one_rank_says_one_rank_and_its_output(app_factory, sqlite_url, tmp_path):
    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=one_rank_course(tmp_path))
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        page = learner.get(f"{attempt}/q/1").text
    assert 'data-testid="run-it"' in page
    assert "Run the snippet on one real rank and watch its output." in page
    assert "each one's output" not in page

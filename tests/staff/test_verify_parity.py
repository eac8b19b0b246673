"""The staff Verify runs what `ranklab verify` runs: the same items, as many runs, the same
verdicts and reasons, against the real executor."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from app.verification import command
from tests.conftest import TEST_CHALLENGES
from tests.support.accounts import sign_up
from tests.support.learner import Learner

pytestmark = pytest.mark.executor

HX = {"HX-Request": "true"}
RESULT = re.compile(
    r'data-testid="verify-result" data-item-id="([\w-]+)" data-verdict="(\w+)" '
    r'data-runs="(\d+)">.*?<pre class="verdict-lines" data-testid="verdict-lines">(.*?)</pre>',
    re.DOTALL,
)


def right_and_wrong_keys(root: Path) -> Path:
    """A challenges folder with one set: the test item with its right key, and a copy of it
    keying a false option."""
    folder = root / "challenges" / "parity"
    folder.mkdir(parents=True)
    source = TEST_CHALLENGES / "runs"
    shutil.copy(source / "all_reduce.py", folder)
    head, item = (source / "set.yaml").read_text().split("items:\n")
    wrong = item.replace("id: all-reduce", "id: wrong-key").replace("answer: A", "answer: B")
    (folder / "set.yaml").write_text(head + "items:\n" + item + wrong)
    return root / "challenges"


def reasons(lines: list[str]) -> list[str]:
    """A verdict's reasons and notes as printed: not its head line (it names the file as the
    command was given it) nor the first run's evidence (its timings differ between runs)."""
    kept = []
    for line in lines[1:]:
        if line.startswith("     observed ("):
            break
        kept.append(line.strip())
    return kept


def test_web_verify_gives_the_cli_verdicts_from_as_many_runs(
    tmp_path, executor_url, app_factory, sqlite_url, capsys
):
    challenges = right_and_wrong_keys(tmp_path)
    assert command.verify(challenges, executor_url=executor_url, as_json=True) == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    cli = {
        record["item_id"]: (record["verdict"], record["runs"], record["reasons"] + record["notes"])
        for record in records
        if record["type"] == "item"
    }
    assert {item: verdict for item, (verdict, _, _) in cli.items()} == {
        "all-reduce": "pass",
        "wrong-key": "fail",
    }

    app = app_factory(sqlite_url, executor_url=executor_url, challenges_dir=challenges)
    with TestClient(app) as client:
        instructor = Learner(client)
        sign_up(instructor, "teacher", sqlite_url, Role.INSTRUCTOR)
        instructor.post("/staff/sets/test-runs/verify", headers=HX)
        job = app.state.verify_jobs.get(("test-runs", None))
        assert job is not None and job.wait(300)
        page = instructor.get("/staff/sets/test-runs/verify", headers=HX).text
    web = {
        item: (verdict, int(runs), reasons(unescape(lines).splitlines()))
        for item, verdict, runs, lines in RESULT.findall(page)
    }
    assert web == cli
    assert cli["all-reduce"][1] >= 3  # the guide's three runs, not fewer

"""What `ranklab new` writes verifies as it is: every key, lab step and proof passes on ranks."""

from __future__ import annotations

import pytest

from app import cli
from tests.verification.test_verify_cli import json_records, verify

pytestmark = pytest.mark.executor


@pytest.mark.timeout(600)
def test_a_scaffolded_topic_set_and_lab_pass_verify_on_real_ranks(tmp_path, executor_url, capsys):
    assert cli.main(["new", "topic", "demo", "--dir", str(tmp_path)]) == 0
    assert cli.main(["new", "set", "demo-basics", "--topic", "demo", "--dir", str(tmp_path)]) == 0
    assert cli.main(["new", "lab", "demo-lab", "--topic", "demo", "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    result = verify(tmp_path, executor_url, "--json", "--jobs", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    *records, summary = json_records(result.stdout)
    verdicts = {
        record.get("item_id") or record.get("step") or record.get("proof"): record["verdict"]
        for record in records
    }
    assert verdicts == {
        "all-reduce-sum": "pass",
        "broadcast-from-rank-1": "pass",
        "missing-init": "pass",
        "sum-of-three-ranks": "pass",
        "all-reduce": "pass",
        "proof sum-on-every-rank": "pass",
        "lesson example sum-two-ranks": "pass",
        "lesson example broadcast-from-rank-1": "pass",
    }, records
    assert summary["ok"]

"""`ranklab verify` against a real executor: green on the shipped content, red on a wrong key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from app import migrations
from app.challenges import loader
from app.config import ROOT
from app.db import make_engine
from app.verification import proofs
from app.verification.models import VerificationRecord
from tests.conftest import TEST_CHALLENGES
from tests.support.content import PROVEN_CONTENT, edit

pytestmark = pytest.mark.executor


def verify(
    path: Path, executor_url: str | None, *options: str, database_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `ranklab verify`; it records only into the database a test names. Without an
    executor_url it starts its private executor, as an author's `ranklab verify` does."""
    command = [sys.executable, "-m", "app.cli", "verify", str(path)]
    command += ["--executor", executor_url] if executor_url else []
    command += [*options] if database_url else [*options, "--no-record"]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**os.environ, "DATABASE_URL": database_url or "sqlite:///never-used.db"},
    )


def json_records(stdout: str) -> list[dict]:
    """Every line of --json output is one JSON record."""
    return [json.loads(line) for line in stdout.splitlines()]


def runs_set_with_three_keys(folder: Path) -> Path:
    """A set whose three executable items share one snippet; the second keys the wrong option."""
    source = TEST_CHALLENGES / "runs"
    shutil.copy(source / "all_reduce.py", folder)
    text = (source / "set.yaml").read_text()
    head, first = text.split("items:\n")
    second = first.replace("id: all-reduce", "id: wrong-key").replace("answer: A", "answer: B")
    third = first.replace("id: all-reduce", "id: third")
    set_file = folder / "set.yaml"
    set_file.write_text(head + "items:\n" + first + second + third)
    return set_file


# The whole course: every key, lab step and proof, longer than the suite's default limit.
@pytest.mark.timeout(900)
def test_every_shipped_key_is_proven_as_the_committed_proofs_say():
    # As an author runs it: its own executor (warm for torch.compile, a slot per job and spare
    # ones for the runs that wait), the cores + 1 jobs. Through the session's executor (a slot
    # per core, 2 jobs) it took 310 s on 2 cores; `make bench-verify` takes about 160 s.
    result = verify(ROOT / "challenges", None, "--json", "--all")
    # The records that failed come first in the message: a whole-course log is truncated.
    failed = [line for line in result.stdout.splitlines() if '"verdict": "fail' in line]
    assert result.returncode == 0, "\n".join(failed) + "\n" + result.stdout + result.stderr
    *records, summary = json_records(result.stdout)
    assert summary["ok"] and summary["counts"].get("pass", 0) >= 5
    observed = {
        (
            proofs.step_key(r["lab"], r["step"])
            if r["type"] == "lab_step"
            else r["key"]
            if r["type"] == "proof"
            else proofs.item_key(r["set_id"], r["item_id"])
        ): proofs.Proof(r["verdict"], r["content_hash"])
        for r in records
        if r.get("verdict") != "not_executable"
    }
    # CONTENT.md's verify column comes from challenges/proofs.json: it must say what a run
    # observes now, item by item, for exactly the content as it is.
    committed = proofs.load(ROOT / "challenges" / proofs.FILE_NAME)
    # A CPU executor reports GPU items as needing GPUs; the pass a lent GPU host gave the same
    # content (bench/gpu_items.sh judge, same hash) stands: this run cannot contradict it.
    for key, proof in observed.items():
        kept = committed.get(key)
        if proof.verdict == "needs_gpus" and kept == proofs.Proof("pass", proof.hash):
            observed[key] = kept
    assert committed == observed, "stale proofs: run `make proofs`"


def test_proofs_are_merged_into_the_file_and_an_edit_unproves_the_item(executor_url, tmp_path):
    folder = tmp_path / "content"
    shutil.copytree(TEST_CHALLENGES / "runs", folder / "runs")
    shutil.copytree(TEST_CHALLENGES.parent / "labs" / "hello", folder / "hello")
    proofs_file = folder / proofs.FILE_NAME
    stale = {"gone/item": proofs.Proof("pass", "0" * 64)}  # an item since deleted
    proofs.save(proofs_file, stale, None)
    result = verify(folder / "runs", executor_url, "--proofs", str(proofs_file))
    assert result.returncode == 0, result.stdout + result.stderr
    written = proofs.load(proofs_file)
    assert json.loads(proofs_file.read_text())["torch"].startswith("2.")
    loaded = loader.load_path(folder)
    current = proofs.current_hashes(loaded.sets, loaded.labs)
    assert set(written) == {"test-runs/all-reduce"}  # the deleted one is gone; no lab ran
    assert proofs.status(written, "test-runs/all-reduce", current["test-runs/all-reduce"]) == (
        "pass"
    )
    hello_steps = [key for key in current if key.startswith("lab:")]
    assert hello_steps
    assert all(proofs.status(written, key, current[key]) == "unproven" for key in hello_steps)

    # An edit to the snippet changes the item's hash: it is no longer proven as it is.
    snippet = folder / "runs" / "all_reduce.py"
    snippet.write_text(snippet.read_text() + "\n# edited\n")
    edited = loader.load_path(folder)
    digest = proofs.current_hashes(edited.sets, edited.labs)["test-runs/all-reduce"]
    assert proofs.status(written, "test-runs/all-reduce", digest) == "unproven"


def test_a_copy_with_one_wrong_key_fails_with_the_observed_output(executor_url, tmp_path):
    copy = tmp_path / "ddp-mastery"
    shutil.copytree(ROOT / "challenges" / "ddp-mastery", copy)
    set_file = copy / "set.yaml"
    text = set_file.read_text()
    start = text.index("id: ddp-forward-output")
    answer_at = text.index("    answer: A", start)
    # A lone copy of the set: without the course's topic.yaml it starts a topic of its own.
    text = text.replace("\ntopic: ", "\nown_topic: true\ntopic: ", 1)
    answer_at = text.index("    answer: A", text.index("id: ddp-forward-output"))
    set_file.write_text(
        text[:answer_at] + "    answer: B" + text[answer_at + len("    answer: A") :]
    )
    result = verify(set_file, executor_url)
    assert result.returncode == 1
    assert "FAIL " in result.stdout and "ddp-forward-output" in result.stdout
    assert "key B:" in result.stdout and "distractor A also matches" in result.stdout
    assert "rank 0: ok" in result.stdout  # the evidence
    assert "PASS " in result.stdout  # the other executable item still passes


def test_a_true_proof_passes_a_false_one_fails_with_what_ran_and_a_gpu_one_waits(
    executor_url, tmp_path
):
    folder = tmp_path / "proven"
    shutil.copytree(PROVEN_CONTENT, folder)
    topic = folder / "topic.yaml"
    edit(topic, 'all: {stdout: "sum 3.0\\n"}', 'all: {stdout: "sum 4.0\\n"}')  # false
    edit(topic, "      launch: {nproc: 2}\n", "      launch: {nproc: 2, gpus: 1}\n")
    proofs_file = folder / proofs.FILE_NAME
    result = verify(folder, executor_url, "--proofs", str(proofs_file))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    shown = str(topic)
    assert f"FAIL {shown} proof all-reduce-sums" in lines
    assert "     proof: runs 1, 2, 3: rank 0 printed 'sum 3.0\\n', expected 'sum 4.0\\n'" in lines
    assert "       rank 1: ok, stdout 'sum 3.0\\n'" in lines  # the observed output
    assert f"PASS {shown} proof all-reduce-returns-none" in lines  # a true proof
    assert f"GPU  {shown} world-size-card proof" in lines
    assert "     needs 1 GPU(s); this executor has 0" in lines
    assert lines[-1] == "verify: 1 fail, 1 needs_gpus, 1 pass; 0 file error(s)"
    written = proofs.load(proofs_file)
    assert {key: proof.verdict for key, proof in written.items()} == {
        "topic:proven:proof:all-reduce-sums": "fail",
        "topic:proven:proof:all-reduce-returns-none": "pass",
        "topic:proven:card:world-size-card": "needs_gpus",
    }
    loaded = loader.load_path(folder)
    current = proofs.current_hashes(loaded.sets, loaded.labs, loaded.topics)
    assert all(written[key].hash == current[key] for key in written)


def test_an_item_needing_gpus_is_reported_not_passed_or_failed(executor_url, tmp_path):
    set_file = tmp_path / "gpu.yaml"
    set_file.write_text(
        (ROOT / "challenges/multi-gpu-master/set.yaml")
        .read_text()
        .replace("      gpus: 0", "      gpus: 2", 1)
        .replace("\ntopic: ", "\nown_topic: true\ntopic: ", 1)  # no topic.yaml beside it
    )
    for snippet in (ROOT / "challenges/multi-gpu-master").glob("*.py"):
        shutil.copy(snippet, tmp_path)
    # Its distractors name beliefs from the course's catalogue.
    shutil.copy(ROOT / "challenges/misconceptions.yaml", tmp_path)
    result = verify(set_file, executor_url)
    assert result.returncode == 0, result.stdout
    assert "GPU " in result.stdout and "needs 2 GPU(s); this executor has 0" in result.stdout


def test_json_gives_one_record_per_item_in_order_then_a_summary(executor_url):
    result = verify(TEST_CHALLENGES, executor_url, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    *items, summary = json_records(result.stdout)
    assert [record["type"] for record in items] == ["item"] * len(items)
    # Only what runs is verified and reported: the set's conceptual items have nothing to prove.
    assert [(record["set_id"], record["item_id"]) for record in items] == [
        ("test-runs", "all-reduce")
    ]
    executed = items[-1]
    assert executed["item_id"] == "all-reduce" and executed["verdict"] == "pass"
    assert executed["set_file"].endswith("tests/fixtures/challenges/runs/set.yaml")
    assert executed["reasons"] == [] and isinstance(executed["notes"], list)
    environment = executed["environment"]
    assert set(environment) == {"torch", "backend", "device", "nproc", "python"}
    assert (environment["backend"], environment["device"], environment["nproc"]) == (
        "gloo",
        "cpu",
        2,
    )
    assert environment["torch"].startswith("2.") and executed["duration_ms"] > 0
    assert len(executed["content_hash"]) == 64
    assert summary["type"] == "summary" and summary["ok"] is True
    assert summary["counts"] == {"pass": 1}
    assert summary["file_errors"] == [] and summary["recorded"] is False


def test_jobs_verify_several_items_at_once_and_report_them_in_order(executor_url, tmp_path):
    set_file = runs_set_with_three_keys(tmp_path)
    result = verify(set_file, executor_url, "--jobs", "3", "--json", "--repeats", "2")
    assert result.returncode == 1, result.stdout + result.stderr
    *items, summary = json_records(result.stdout)
    verdicts = [(record["item_id"], record["verdict"]) for record in items]
    assert verdicts == [("all-reduce", "pass"), ("wrong-key", "fail"), ("third", "pass")]
    assert any("distractor A also matches" in reason for reason in items[1]["reasons"])
    assert summary["ok"] is False and summary["counts"] == {"fail": 1, "pass": 2}


def test_the_human_output_with_jobs_is_unchanged(executor_url, tmp_path):
    set_file = runs_set_with_three_keys(tmp_path)
    result = verify(set_file, executor_url, "--jobs", "2", "--repeats", "2")
    assert result.returncode == 1
    labels = [
        line.split()[0] + " " + line.split()[-1]
        for line in result.stdout.splitlines()
        if line.startswith(("PASS", "FAIL"))
    ]
    assert labels == ["PASS all-reduce", "FAIL wrong-key", "PASS third"]
    assert result.stdout.splitlines()[-1] == "verify: 1 fail, 2 pass; 0 file error(s)"


def test_results_are_recorded_in_a_migrated_database(executor_url, tmp_path):
    url = f"sqlite:///{tmp_path / 'ranklab.db'}"
    migrations.upgrade(url)
    result = verify(TEST_CHALLENGES / "runs", executor_url, "--json", database_url=url)
    assert result.returncode == 0, result.stderr
    printed, summary = json_records(result.stdout)
    assert summary["recorded"] is True
    engine = make_engine(url)
    with Session(engine) as session:
        stored = session.exec(select(VerificationRecord)).one()
    engine.dispose()
    assert (stored.set_id, stored.item_id, stored.verdict.value) == (
        "test-runs",
        "all-reduce",
        "pass",
    )
    assert stored.content_hash == printed["content_hash"]
    assert (stored.torch, stored.backend, stored.nproc) == (
        printed["environment"]["torch"],
        "gloo",
        2,
    )


def test_a_database_that_is_not_migrated_is_named_in_one_line_and_skipped(executor_url, tmp_path):
    url = f"sqlite:///{tmp_path / 'absent.db'}"
    result = verify(TEST_CHALLENGES / "basics", executor_url, database_url=url)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("verify: not recording results:") == 1
    assert "absent.db does not exist" in result.stderr
    assert not (tmp_path / "absent.db").exists()

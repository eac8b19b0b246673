"""bench/gpu_items.py: the GPU host's half finds and runs the GPU items; the judge half proves
them with verify's rules and records only what still matches the content.

The GPU half is exercised on CPU ranks (gloo snippets declared `gpus: 1`, the host told it has
one GPU): the same torchrun launch and per-rank records a CUDA host uses.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bench import gpu_items

SNIPPET = """import torch.distributed as dist
dist.init_process_group("gloo")
print(f"sum {dist.get_rank() + 1}")
dist.destroy_process_group()
"""

SET = """id: gpu-fixture
title: t
topic: gpu-fixture-topic
description: d
badge: {name: b}
items:
  - id: on-gpu
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: t
    prompt: p
    code_file: snippet.py
    launch: {nproc: 1, backend: gloo, gpus: 1, timeout_s: 30}
    options:
      - {id: A, text: a, outcome: {ranks: {all: {stdout: "KEY\\n"}}}}
      - {id: B, text: b, outcome: {ranks: {all: {stdout: "OTHER\\n"}}}}
    answer: A
    explanation: e
  - id: on-cpu
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: t
    prompt: p
    code_file: snippet.py
    launch: {nproc: 1, backend: gloo, timeout_s: 30}
    options:
      - {id: A, text: a, outcome: {ranks: {all: {stdout: "sum 1\\n"}}}}
      - {id: B, text: b, outcome: {ranks: {all: {stdout: "sum 2\\n"}}}}
    answer: A
    explanation: e
  - id: two-gpus
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: t
    prompt: p
    code_file: snippet.py
    launch: {nproc: 2, backend: nccl, gpus: 2, timeout_s: 30}
    options:
      - {id: A, text: a, outcome: {ranks: {all: {stdout: "x\\n"}}}}
      - {id: B, text: b, outcome: {ranks: {all: {stdout: "y\\n"}}}}
    answer: A
    explanation: e
"""


TOPIC = """id: gpu-fixture-topic
title: t
summary: s
proofs:
  - id: on-gpu-proof
    code_file: snippet.py
    launch: {nproc: 1, backend: gloo, gpus: 1, timeout_s: 30}
    outcome: {ranks: {all: {stdout: "KEY\\n"}}}
"""


def write_content(root: Path, key: str) -> Path:
    """A course with one set (a 1-GPU item keyed `key`, a CPU item, a 2-GPU item) and a topic
    whose named proof runs the same snippet on 1 GPU."""
    folder = root / "challenges" / "gpu-fixture"
    folder.mkdir(parents=True)
    (folder / "snippet.py").write_text(SNIPPET)
    (folder / "set.yaml").write_text(SET.replace("KEY", key))
    (folder / "topic.yaml").write_text(TOPIC.replace("KEY", key))
    return root / "challenges"


def run_on_this_host(challenges: Path, out: Path) -> dict:
    """The GPU half, told this CPU host has one GPU."""
    args = argparse.Namespace(challenges=challenges, out=out, repeats=1, host_gpus=1)
    assert gpu_items.command_run(args) == 0
    return json.loads((out / gpu_items.OBSERVATIONS).read_text())


def judge(observations: Path, challenges: Path, proofs: Path) -> int:
    args = argparse.Namespace(observations=observations, challenges=challenges, proofs=proofs)
    return gpu_items.command_judge(args)


def test_only_items_that_ask_for_gpus_are_picked(tmp_path: Path) -> None:
    challenges = write_content(tmp_path, "sum 1")
    keys = [run["key"] for run in gpu_items.gpu_runs(challenges)]
    assert keys == [
        "gpu-fixture/on-gpu",
        "gpu-fixture/two-gpus",
        "topic:gpu-fixture-topic:proof:on-gpu-proof",
    ]


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The course above with a true key, and one run of its GPU half on this host."""
    root = tmp_path_factory.mktemp("gpu")
    challenges = write_content(root, "sum 1")
    report = run_on_this_host(challenges, root / "out")
    return challenges, root / "out" / gpu_items.OBSERVATIONS, report


@pytest.mark.executor
def test_a_true_key_is_recorded_as_passed_and_a_wrong_one_as_failed(
    gpu_run: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    challenges, observations, report = gpu_run
    assert report["skipped"] == {"gpu-fixture/two-gpus": "needs 2 GPUs; this host has 1"}
    observed = report["runs"]["gpu-fixture/on-gpu"]["observations"][0]["ranks"][0]
    assert observed["stdout"] == "sum 1\n" and observed["record"] == {"ended": "returned"}
    proofs = tmp_path / "proofs.json"
    other = {"verdict": "pass", "hash": "abc"}
    proofs.write_text(json.dumps({"torch": "2.13.0+cpu", "proofs": {"other/item": other}}))

    assert judge(observations, challenges, proofs) == 0
    recorded = json.loads(proofs.read_text())
    assert recorded["proofs"]["gpu-fixture/on-gpu"]["verdict"] == "pass"
    assert recorded["proofs"]["topic:gpu-fixture-topic:proof:on-gpu-proof"]["verdict"] == "pass"
    assert recorded["proofs"]["other/item"] == other
    assert recorded["torch"] == "2.13.0+cpu"

    wrong = write_content(tmp_path / "wrong", "sum 2")  # the same snippet, a wrong key
    assert judge(observations, wrong, proofs) == 1
    recorded = json.loads(proofs.read_text())["proofs"]
    assert recorded["gpu-fixture/on-gpu"]["verdict"] == "fail"
    assert recorded["topic:gpu-fixture-topic:proof:on-gpu-proof"]["verdict"] == "fail"


@pytest.mark.executor
def test_an_item_whose_snippet_changed_since_the_run_is_not_recorded(
    gpu_run: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    _, observations, _ = gpu_run
    edited = write_content(tmp_path, "sum 1")
    snippet = edited / "gpu-fixture" / "snippet.py"
    snippet.write_text(SNIPPET.replace("+ 1", "+ 2"))
    proofs = tmp_path / "proofs.json"

    judge(observations, edited, proofs)

    assert not proofs.exists()

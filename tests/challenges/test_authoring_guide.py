"""The annotated example in docs/authoring.md is a valid challenge set."""

from __future__ import annotations

import re
from pathlib import Path

from app.challenges.loader import load_path
from app.config import ROOT


def test_the_guides_example_validates(tmp_path: Path):
    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"````yaml\n(# yaml-language-server.*?)````", guide, re.DOTALL)
    assert example is not None
    folder = tmp_path / "collectives-basics"
    folder.mkdir()
    (folder / "set.yaml").write_text(example[1])
    for snippet in re.findall(r"code_file: (\S+\.py)", example[1]):
        (folder / snippet).write_text("import torch.distributed as dist\n")
    report = load_path(tmp_path)
    assert report.errors == []
    kinds = [item.kind for item in report.sets[0].challenge_set.items]
    assert kinds == ["choice", "predict_output", "debug", "numeric"]


def test_the_tours_topic_example_validates(tmp_path: Path):
    readme = (ROOT / "docs" / "authoring-tour.md").read_text()
    example = re.search(r"```yaml\n(# yaml-language-server: \$schema=\.\./topic.*?)```", readme,
                        re.DOTALL)  # fmt: skip
    assert example is not None
    folder = tmp_path / "ddp"
    folder.mkdir()
    (folder / "topic.yaml").write_text(example[1])
    (folder / "cheatsheet.md").write_text("# DDP on one page\n")
    report = load_path(tmp_path)
    assert report.errors == []
    (topic,) = report.topics
    assert [card.id for card in topic.topic.cards] == ["what-is-ddp"]
    assert [item.kind for item in topic.topic.items] == ["explain"]
    assert topic.cheat_sheet == "# DDP on one page\n"


def test_the_guides_proofs_example_validates(tmp_path: Path):
    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"```yaml\n# proofs-example.*?\n(.*?)```", guide, re.DOTALL)
    assert example is not None
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "topic.yaml").write_text(example[1])
    (folder / "all_reduce_sum.py").write_text("import torch.distributed as dist\n")
    report = load_path(tmp_path)
    assert report.errors == []
    (topic,) = report.topics
    assert [proof.id for proof in topic.topic.proofs] == ["sum-on-every-rank"]
    sourced = topic.topic.cards[1].source
    assert topic.topic.cards[0].proof == "sum-on-every-rank"
    assert sourced is not None and sourced.torch == "2.13.0"


def test_the_guides_lesson_example_validates(tmp_path: Path):
    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"```yaml\n# lesson-example.*?\n(.*?)```", guide, re.DOTALL)
    assert example is not None
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "topic.yaml").write_text("id: demo\ntitle: Demo\nsummary: A lesson.\n" + example[1])
    (folder / "lesson_all_reduce.py").write_text("import torch.distributed as dist\n")
    report = load_path(tmp_path)
    assert report.errors == []
    (topic,) = report.topics
    lesson = topic.topic.lesson
    assert lesson is not None and [q.id for q in lesson.check] == [
        "check-all-reduce-result",
        "check-who-calls",
    ]
    assert topic.lesson_code == {"all-reduce-in-place": "import torch.distributed as dist\n"}

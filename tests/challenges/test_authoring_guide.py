"""The annotated example in docs/authoring.md is a valid challenge set."""

from __future__ import annotations

import re
from pathlib import Path

from ruamel.yaml import YAML

from app.challenges import course_rules
from app.challenges.loader import load_path
from app.challenges.schema import NumericItem, Outcome, RankExpectation, RankOutcome
from app.config import ROOT
from app.lessons.schema import Example


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


def test_every_outcome_form_in_the_guide_is_a_valid_outcome_and_covers_every_field():
    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"```yaml\n# outcome-forms.*?\n(.*?)```", guide, re.DOTALL)
    assert example is not None
    outcomes = [Outcome.model_validate(entry) for entry in YAML(typ="safe").load(example[1])]
    used = {name for o in outcomes for name in o.model_fields_set} | {
        name for o in outcomes for claim in o.ranks.values() for name in claim.model_fields_set
    }
    assert used >= set(Outcome.model_fields) | set(RankExpectation.model_fields) - {"ranks"}
    assert {claim.status for o in outcomes for claim in o.ranks.values()} >= set(RankOutcome)


def test_the_guides_printed_numeric_example_validates(tmp_path: Path):
    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"```yaml\n(- id: sum-of-three-ranks\n.*?)```", guide, re.DOTALL)
    assert example is not None
    head = (
        "id: guide\ntitle: Guide\ntopic: t\nown_topic: true\ndescription: d\n"
        "badge: {name: b}\nitems:\n"
    )
    (tmp_path / "set.yaml").write_text(head + example[1])
    (tmp_path / "sum_three_ranks.py").write_text("print('sum 6.0')\n")
    report = load_path(tmp_path)
    assert report.errors == []
    (item,) = report.sets[0].challenge_set.items
    assert isinstance(item, NumericItem) and item.printed is not None
    assert item.printed.regex == r"sum ([-\d.]+)"


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
        "check-what-it-adds",
    ]
    assert course_rules.lesson_check_problems(report) == []  # a pool, feedback on every miss
    assert topic.lesson_code == {"all-reduce-in-place": "import torch.distributed as dist\n"}


def test_the_guides_hang_and_raise_examples_validate():
    guide = (ROOT / "docs" / "authoring.md").read_text()
    block = re.search(r"```yaml\n# ends-examples.*?\n(.*?)```", guide, re.DOTALL)
    assert block is not None
    entries = YAML(typ="safe").load(block[1])
    hangs, raises = (Example.model_validate(entry) for entry in entries)
    assert hangs.hangs() and hangs.as_proof().outcome.hangs is True
    assert not raises.hangs() and raises.end(1) is not None and raises.end(0) is None


def test_the_guides_variants_example_validates_with_six_variants(tmp_path: Path):
    from app.challenges import variants

    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"```yaml\n# variants-example.*?\n(.*?)```", guide, re.DOTALL)
    assert example is not None
    folder = tmp_path / "demo"
    folder.mkdir()
    head = "own_topic: true\nid: demo\ntitle: Demo\ntopic: Demo\ndescription: d\n"
    (folder / "set.yaml").write_text(head + "badge: {name: B}\nitems:\n" + example[1])
    report = load_path(tmp_path)
    assert report.errors == []
    (item,) = report.sets[0].challenge_set.items
    found = variants.variants_of(item)
    assert len(found) == 6
    last = variants.render(item, found[-1].key)
    assert 'OP = "MAX"' in last.code and [o.text for o in last.options] == [
        "`4.0` on every rank", "`3.0` on every rank",
    ]  # fmt: skip


def test_the_guides_rank_keys_example_validates_and_names_each_variants_ranks(tmp_path: Path):
    from app.challenges import variants

    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"```yaml\n# variant-ranks-example.*?\n(.*?)```", guide, re.DOTALL)
    assert example is not None
    folder = tmp_path / "demo"
    folder.mkdir()
    head = "own_topic: true\nid: demo\ntitle: Demo\ntopic: Demo\ndescription: d\n"
    (folder / "set.yaml").write_text(head + "badge: {name: B}\nitems:\n" + example[1])
    report = load_path(tmp_path)
    assert report.errors == []
    (item,) = report.sets[0].challenge_set.items
    found = {variant.label: variant.key for variant in variants.variants_of(item)}
    assert list(found) == ["nproc=3, SRC=1", "nproc=3, SRC=2", "nproc=4, SRC=1", "nproc=4, SRC=2"]
    rendered = variants.render(item, found["nproc=4, SRC=2"])
    key, believed, _ordered = (
        {rank: claim.stdout for rank, claim in option.outcome.ranks.items()}
        for option in rendered.options
    )
    assert key == {"0": "replaced\n", "1": "replaced\n", "2": "kept\n", "3": "replaced\n"}
    assert believed == {"0": "kept\n", "1": "replaced\n", "2": "replaced\n", "3": "replaced\n"}
    assert rendered.options[1].text == "Rank 0 prints `kept`; every other rank prints `replaced`"
    assert rendered.options[2].outcome.order_varies is False  # the key's, in one order


def test_the_guides_transforms_example_validates(tmp_path: Path):
    guide = (ROOT / "docs" / "authoring.md").read_text()
    example = re.search(r"```yaml\n# variant-transforms-example.*?\n(.*?)```", guide, re.DOTALL)
    assert example is not None
    folder = tmp_path / "demo"
    folder.mkdir()
    head = "own_topic: true\nid: demo\ntitle: Demo\ntopic: Demo\ndescription: d\n"
    (folder / "set.yaml").write_text(head + "badge: {name: B}\nitems:\n" + example[1])
    report = load_path(tmp_path)
    assert report.errors == []

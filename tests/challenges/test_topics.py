"""Topic files: cards, untimed items and cheat sheets load; every mistake is a file:line:col
error that skips only that file; sets find their topic by id or title."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges.catalog import Catalog
from app.challenges.loader import load_path
from tests.conftest import FIXTURES
from tests.support.content import edit, line_of

MODES = FIXTURES / "modes"


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """A copy of the learning-mode fixtures that a test may break."""
    target = tmp_path / "challenges"
    shutil.copytree(MODES, target / "drill")
    return target


def test_a_topic_gathers_its_sets_cards_items_and_cheat_sheet(content: Path) -> None:
    catalog = Catalog.load(content)
    assert catalog.errors == []
    topic = catalog.topic("drill")
    assert topic is not None and topic.title == "Drill topic"
    assert [facts.set.id for facts in topic.sets] == ["modes-drill"]
    assert [card.item.id for card in topic.cards] == [
        "what-is-rank", "what-is-world-size", "who-is-rank-zero"
    ]  # fmt: skip
    # Practice: the set's items first, then the topic's own (explain-it has its own mode).
    assert [(e.deck, e.item.id) for e in topic.practice] == [
        ("modes-drill", "world-size"), ("modes-drill", "all-reduce-sum"), ("drill", "barrier")
    ]  # fmt: skip
    assert [e.item.id for e in topic.explain] == ["explain-averaging"]
    assert topic.cheat_sheet is not None and "| rank | one process |" in topic.cheat_sheet
    card = catalog.entry("drill", "what-is-rank")
    assert card is not None and card.is_card
    assert card.item.title == "What is a **rank**?"  # by default, the front's first line
    assert catalog.topic_of("modes-drill") == topic


def test_a_set_finds_its_topic_by_title_and_one_that_says_so_starts_its_own(
    content: Path,
) -> None:
    edit(content / "drill" / "set.yaml", "topic: drill", "topic: DRILL TOPIC")
    other = content / "other"
    shutil.copytree(content / "drill", other)
    (other / "topic.yaml").unlink()
    edit(other / "set.yaml", "id: modes-drill", "id: lonely-set")
    edit(
        other / "set.yaml",
        "topic: DRILL TOPIC",
        "topic: Pipeline parallelism\nown_topic: true",
    )
    catalog = Catalog.load(content)
    assert catalog.errors == []
    assert [f.set.id for f in catalog.topic("drill").sets] == ["modes-drill"]  # type: ignore[union-attr]
    lonely = catalog.topic("pipeline-parallelism")
    assert lonely is not None and lonely.title == "Pipeline parallelism"
    assert lonely.cards == () and lonely.cheat_sheet is None
    assert [f.set.id for f in lonely.sets] == ["lonely-set"]


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        ("    front: What is the **world size**?", "    fronts: What?", "fronts:",
         "unknown field 'fronts'"),
        ("    kind: choice\n    category: Conceptual\n    difficulty: beginner\n"
         "    title: What a barrier does",
         "    kind: predict_output\n    category: Conceptual\n    difficulty: beginner\n"
         "    code: print(1)\n    title: What a barrier does", "barrier",
         "it belongs in a challenge set"),
        ("the replicas stay identical", "training goes on", "- id: explain-averaging",
         "the model answer does not cover concept(s) ['replicas stay identical']"),
    ],
)  # fmt: skip
def test_a_broken_topic_file_is_reported_at_its_line_and_only_it_is_skipped(
    content: Path, old: str, new: str, needle: str, message: str
) -> None:
    path = content / "drill" / "topic.yaml"
    edit(path, old, new)
    report = load_path(content, display_root=content.parent)
    assert report.topics == []
    assert [loaded.challenge_set.id for loaded in report.sets] == ["modes-drill"]
    assert any(message in str(error) for error in report.errors), report.errors
    error = next(error for error in report.errors if message in str(error))
    assert error.path == "challenges/drill/topic.yaml"
    assert error.line == line_of(path, needle)


def test_an_explain_or_flashcard_item_in_a_timed_set_is_refused(content: Path) -> None:
    path = content / "drill" / "set.yaml"
    edit(path, "    kind: numeric", "    kind: explain")
    report = load_path(content)
    assert report.sets == []
    messages = [(error.line, error.message) for error in report.errors]
    item_line = line_of(path, "id: all-reduce-sum")
    assert (
        item_line,
        "kind 'explain' belongs in a topic file (topic.yaml), not in a timed set",
    ) in messages


def test_a_topic_id_shared_with_a_set_or_another_topic_is_an_error(content: Path) -> None:
    twin = content / "twin"
    twin.mkdir()
    shutil.copy(content / "drill" / "topic.yaml", twin / "topic.yaml")
    report = load_path(content)
    assert len(report.topics) == 1
    assert any("topic id 'drill' is already taken" in str(e) for e in report.errors)
    edit(twin / "topic.yaml", "id: drill", "id: modes-drill")
    report = load_path(content)
    assert [t.topic.id for t in report.topics] == ["drill"]
    assert any("is also the id of the set" in str(e) for e in report.errors), report.errors


def test_a_cheat_sheet_file_must_exist_and_speak_to_learners(content: Path) -> None:
    path = content / "drill" / "topic.yaml"
    text = path.read_text()
    sheet = text[text.index("cheat_sheet: |") :]
    path.write_text(text.replace(sheet, "cheat_sheet_file: sheet.md\n"))
    report = load_path(content)
    assert report.topics == []
    assert [str(e).split(": ", 1)[1] for e in report.errors] == [
        "cheat_sheet_file 'sheet.md' not found beside topic.yaml"
    ]
    assert report.errors[0].line == line_of(path, "cheat_sheet_file")
    (content / "drill" / "sheet.md").write_text("# Ranks\n\nTODO: say more.\n")
    report = load_path(content)
    assert report.topics == []
    assert any("sheet.md" not in str(e) and "line 3" in str(e) and "TODO" in str(e)
               for e in report.errors), report.errors  # fmt: skip


NUMERIC_TOPIC_ITEM = """\
  - id: ranks-launched
    kind: numeric
    category: Conceptual
    difficulty: beginner
    title: How many ranks
    prompt: How many processes does this launch start?
    code_file: launch.py
    answer: 4
    explanation: One process per rank.
"""


def test_a_topic_items_code_file_is_read_and_shown_with_it(content: Path) -> None:
    path = content / "drill" / "topic.yaml"
    edit(path, "items:\n", "items:\n" + NUMERIC_TOPIC_ITEM)
    (content / "drill" / "launch.py").write_text("# torchrun --nproc-per-node 4 train.py\n")
    catalog = Catalog.load(content)
    assert catalog.errors == []
    entry = catalog.entry("drill", "ranks-launched")
    assert entry is not None and entry.code == "# torchrun --nproc-per-node 4 train.py\n"


def test_a_topic_items_missing_code_file_is_an_error_at_its_line(content: Path) -> None:
    path = content / "drill" / "topic.yaml"
    edit(path, "items:\n", "items:\n" + NUMERIC_TOPIC_ITEM)
    report = load_path(content, display_root=content.parent)
    assert report.topics == []
    assert [(e.path, e.line, e.message) for e in report.errors] == [
        (
            "challenges/drill/topic.yaml",
            line_of(path, "code_file: launch.py"),
            "code_file 'launch.py' not found beside topic.yaml",
        )
    ]


def test_a_parameterised_topic_items_code_file_is_rewritten_per_variant(content: Path) -> None:
    from app.challenges import variants

    path = content / "drill" / "topic.yaml"
    item = NUMERIC_TOPIC_ITEM.replace(
        "    answer: 4\n", "    params: {N: [4, 8]}\n    answer: 4\n    answer_from: N\n"
    )
    edit(path, "items:\n", "items:\n" + item)
    (content / "drill" / "launch.py").write_text("N = 4  # ranks\nprint(N)\n")
    catalog = Catalog.load(content)
    assert catalog.errors == []
    entry = catalog.entry("drill", "ranks-launched")
    assert entry is not None
    keys = [variant.key for variant in variants.variants_of(entry.item)]
    shown = [variants.render(entry.item, key) for key in keys]
    # As practice shows a variant (app.modes.routes._as_shown): its own code, else the entry's.
    codes = [one.code if isinstance(one.code, str) else entry.code for one in shown]  # type: ignore[attr-defined]
    answers = [one.answer for one in shown]  # type: ignore[attr-defined]
    assert sorted(zip(codes, answers, strict=True)) == [
        ("N = 4  # ranks\nprint(N)\n", 4.0), ("N = 8  # ranks\nprint(N)\n", 8.0)
    ]  # fmt: skip

"""The misconception catalogue: options name its entries, validate places every bad reference at
file:line:col, each entry's correction exists, and a set's version keeps its tags."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from app.attempts import rules as attempt_rules
from app.challenges import misconceptions
from app.challenges.base import ChoiceBase
from app.challenges.catalog import Catalog
from app.challenges.loader import load_path
from app.cli import main
from app.config import ROOT
from app.publishing import versions
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.content import edit, line_of, with_misconceptions


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """A copy of the test challenges with the catalogue and two tagged distractors."""
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    with_misconceptions(target, FIXTURES)
    return target


def errors_of(root: Path) -> list[str]:
    return [str(error) for error in load_path(root, display_root=root.parent).errors]


def test_tagged_distractors_load_with_the_catalogue_and_name_their_beliefs(content: Path):
    report = load_path(content)
    assert report.errors == []
    assert set(report.misconceptions) == {"world-size-counts-gpus", "world-size-is-rank"}
    [basics] = [one for one in report.sets if one.challenge_set.id == "test-basics"]
    item = basics.challenge_set.item("world-size")
    assert attempt_rules.first_pick_misconceptions(item, "A") == ["world-size-counts-gpus"]
    assert attempt_rules.first_pick_misconceptions(item, "B") == []  # the key names none
    assert attempt_rules.first_pick_misconceptions(item, None) == []
    entry = Catalog.load(content).misconceptions["world-size-counts-gpus"]
    assert entry.corrected_by.href == "/topics/lesson-drill/lesson#section-typed"


def test_an_unknown_id_is_refused_at_the_options_value_with_a_suggestion(content: Path):
    set_file = content / "basics" / "set.yaml"
    edit(set_file, "misconception: world-size-is-rank", "misconception: world-size-is-rnak")
    line = line_of(set_file, "world-size-is-rnak")
    column = set_file.read_text().splitlines()[line - 1].index("world-size-is-rnak") + 1
    assert errors_of(content) == [
        f"challenges/basics/set.yaml:{line}:{column}: misconception 'world-size-is-rnak' is not "
        "in misconceptions.yaml; did you mean 'world-size-is-rank'?"
    ]
    assert main(["validate", str(content)]) == 1


def test_a_tag_with_no_catalogue_says_so(content: Path):
    (content / "misconceptions.yaml").unlink()
    found = errors_of(content)
    assert len(found) == 2
    assert all("the course has no valid misconceptions.yaml" in error for error in found)


@pytest.mark.parametrize(
    ("written", "typo", "said"),
    [
        ("section: typed}", "section: tpyed}", "topic 'lesson-drill' has no lesson section "
         "'tpyed'; did you mean 'typed'?"),
        ("{topic: lesson-drill, section: typed}", "{topic: lesson-dril, section: typed}",
         "topic 'lesson-dril' is no topic's id; did you mean 'lesson-drill'?"),
    ],
)  # fmt: skip
def test_a_correction_that_does_not_exist_is_refused_at_its_field(
    content: Path, written: str, typo: str, said: str
):
    catalogue = content / "misconceptions.yaml"
    edit(catalogue, written, typo)
    [error] = errors_of(content)
    line = line_of(catalogue, typo)
    assert error.startswith(f"challenges/misconceptions.yaml:{line}:")
    assert error.endswith(said)


def test_a_card_or_cheat_sheet_line_corrects_only_when_it_exists(content: Path):
    catalogue = content / "misconceptions.yaml"
    edit(catalogue, "{topic: lesson-drill, section: chosen}", "{topic: lesson-drill, card: nope}")
    [error] = errors_of(content)
    assert "topic 'lesson-drill' has no card 'nope'" in error
    edit(catalogue, "card: nope", "cheat_sheet: all_reduce")
    [error] = errors_of(content)
    assert "0 lines of topic 'lesson-drill''s cheat sheet hold 'all_reduce'" in error


def test_an_entry_names_exactly_one_correction_and_a_key_names_no_misconception(content: Path):
    edit(content / "misconceptions.yaml", "section: chosen}", "section: chosen, card: x}")
    [error] = errors_of(content)
    assert "exactly one of section, card or cheat_sheet" in error
    edit(content / "misconceptions.yaml", "section: chosen, card: x}", "section: chosen}")
    edit(content / "basics" / "set.yaml", "feedback: FEEDBACK-B-WORLD Yes.}",
         "feedback: FEEDBACK-B-WORLD Yes., misconception: world-size-is-rank}")  # fmt: skip
    [error] = errors_of(content)
    assert "a key stands for no misconception: drop `misconception:` from ['B']" in error


def test_a_sets_version_keeps_its_tags_and_an_untagged_set_keeps_its_hash(content: Path):
    report = load_path(content)
    [basics] = [one for one in report.sets if one.challenge_set.id == "test-basics"]
    unit = versions.unit_of(basics)
    assert unit.payload["misconceptions"] == {
        "world-size": {"A": "world-size-counts-gpus", "C": "world-size-is-rank"}
    }
    assert "misconception" not in str(unit.payload["set"])  # the items' dumps are as before
    stored = versions.stored("set", unit.path, versions.dump(unit.payload))
    assert stored.hash == unit.hash
    item = stored.loaded.challenge_set.item("world-size")  # type: ignore[union-attr]
    assert [option.misconception for option in item.options] == [
        "world-size-counts-gpus",
        None,
        "world-size-is-rank",
    ]
    plain = load_path(TEST_CHALLENGES)
    [untagged] = [one for one in plain.sets if one.challenge_set.id == "test-basics"]
    assert "misconceptions" not in versions.unit_of(untagged).payload


def test_the_shipped_catalogue_is_sound_and_every_entry_is_named_by_a_distractor():
    report = load_path(ROOT / "challenges")
    assert report.errors == []
    named = {
        option.misconception
        for loaded in report.sets
        for item in loaded.challenge_set.items
        for option in getattr(item, "options", [])
        if option.misconception is not None
    }
    named |= {  # a lesson check's distractors name beliefs too (issue 37)
        option.misconception
        for topic in report.topics
        if topic.topic.lesson is not None
        for question in topic.topic.lesson.check
        for option in question.options
        if option.misconception is not None
    }
    assert named == set(report.misconceptions)
    for entry in report.misconceptions.values():
        assert entry.belief.endswith(".") and entry.belief.count(". ") == 0, entry.id


def test_every_shipped_distractor_names_a_belief_or_says_why_it_stands_for_none():
    # A distractor left untagged is a slip (an arithmetic slip, a misread snippet), and the
    # line above it says so, so that an untagged belief is a decision, not an oversight.
    report = load_path(ROOT / "challenges")
    silent = []
    for loaded in report.sets:
        document = YAML().load(Path(loaded.path).read_text())
        lines = Path(loaded.path).read_text().splitlines()
        for item, written in zip(loaded.challenge_set.items, document["items"], strict=True):
            if not isinstance(item, ChoiceBase):
                continue
            for place, option in enumerate(item.options):
                if option.id in item.answer_ids or option.misconception is not None:
                    continue
                line = written["options"].lc.item(place)[0]
                if not lines[line - 1].strip().startswith("# Untagged:"):
                    silent.append(f"{loaded.challenge_set.id}/{item.id} option {option.id}")
    assert silent == []


def test_the_catalogue_schema_forbids_unknown_fields():
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        misconceptions.Catalogue.model_validate(
            {"misconceptions": [{"id": "a-b", "belief": "A wrong belief.", "typo": 1}]}
        )

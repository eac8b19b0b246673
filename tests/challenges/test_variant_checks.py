"""Validate refuses a parameterised item that cannot render every variant right, at file:line:col,
naming the variant's parameters where one variant is wrong."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges.loader import load_path
from tests.challenges.test_loader import break_file
from tests.conftest import TEST_CHALLENGES

FIXTURE = TEST_CHALLENGES.parent / "variants"


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """A copy of the variant fixtures that a test may break."""
    target = tmp_path / "variants"
    shutil.copytree(FIXTURE, target)
    return target


def errors(root: Path) -> list[str]:
    return [str(error) for error in load_path(root, display_root=root.parent).errors]


def test_the_variant_fixtures_load():
    assert errors(FIXTURE) == []


def test_a_parameter_the_snippet_does_not_assign_is_refused_at_the_parameter(content: Path):
    break_file(content / "all_reduce_op.py", 'OP = "SUM"\n', "")
    assert errors(content) == [
        "variants/set.yaml:23:7: parameter OP is not assigned in all_reduce_op.py: declare it "
        'once at the top level as a plain assignment, e.g. `OP = "SUM"`'
    ]


def test_a_parameter_assigned_twice_is_refused_naming_both_lines(content: Path):
    break_file(content / "broadcast_src.py", "SRC = 1\n", "SRC = 1\nSRC = 2\n")
    (found,) = errors(content)
    assert found.startswith("variants/set.yaml:")
    assert "SRC is assigned 2 times at the top level of broadcast_src.py (lines 4, 5)" in found


def test_an_unknown_placeholder_is_refused_at_the_text(content: Path):
    break_file(content / "set.yaml", "title: all_reduce with {OP}", "title: all_reduce with {Op}")
    (found,) = errors(content)
    assert found.startswith("variants/set.yaml:14:5: unknown name(s) ['Op'] in {…}")


def test_a_derive_expression_that_calls_anything_else_is_refused(content: Path):
    break_file(content / "set.yaml", 'own: "1.0"', 'own: "abs.__class__"')
    (found,) = errors(content)
    assert found.startswith("variants/set.yaml:26:7: Attribute is not allowed")
    break_file(content / "set.yaml", 'own: "abs.__class__"', "own: \"open('x')\"")
    (found,) = errors(content)
    assert "only these functions may be called" in found


def test_a_distractor_equal_to_the_key_in_one_variant_is_refused_naming_it(content: Path):
    # A misconception whose value is the true maximum: the distractor is the key with MAX.
    break_file(
        content / "set.yaml",
        "as_if: {result: \"float(nproc - 1 if OP == 'MAX' else sum(range(nproc)))\"}",
        "as_if: {result: \"float(nproc) if OP == 'MAX' else 0.0\"}",
    )
    found = errors(content)
    assert len(found) == 3, found
    assert all(line.startswith("variants/set.yaml:31:9: variant nproc=") for line in found)
    assert (
        "variant nproc=2, OP=MAX: distractor B reads the same as key A ('`2.0` on every rank')"
        in found[0]
    )
    assert [line.split(": distractor")[0].split(": ", 1)[1] for line in found] == [
        "variant nproc=2, OP=MAX", "variant nproc=3, OP=MAX", "variant nproc=4, OP=MAX",
    ]  # fmt: skip


def test_a_variant_naming_a_rank_it_does_not_start_is_refused_at_that_variant(content: Path):
    set_file = content / "set.yaml"
    break_file(
        set_file,
        "    params:\n      SRC: [0, 1, 2]",
        "    params:\n      nproc: [3, 2]\n      SRC: [0, 1, 2]",
    )
    break_file(
        set_file,
        'outcome: {ranks: {all: {stdout: "{sent}\\n"}}}',
        'outcome: {ranks: {all: {stdout: "{sent}\\n"}, "2": {status: returns}}}',
    )
    found = errors(content)
    assert len(found) == 6, found  # the key's outcome and its as_if copy, in 3 variants
    assert all(
        ": variant nproc=2, SRC=" in line and "rank 2 does not exist" in line for line in found
    )


def test_a_rank_key_rendering_to_no_rank_is_refused_at_the_key_naming_the_variant(
    content: Path,
):
    plain = 'outcome: {ranks: {all: {stdout: "{sent}\\n"}}}'
    wrong = 'outcome: {ranks: {"{SRC + 1}": {stdout: "{sent}\\n"}}}'
    break_file(content / "set.yaml", plain, wrong)
    assert errors(content) == [
        "variants/set.yaml:57:27: variant SRC=2: rank key '{SRC + 1}' renders to rank 3, which "
        "does not exist: this variant starts 3 ranks (0 to 2)"
    ]


def test_a_rank_key_naming_a_rank_twice_in_one_variant_is_refused(content: Path):
    plain = 'outcome: {ranks: {all: {stdout: "{sent}\\n"}}}'
    twice = 'outcome: {ranks: {"{SRC}": {stdout: "{sent}\\n"}, "1": {status: returns}}}'
    break_file(content / "set.yaml", plain, twice)
    assert errors(content) == [
        "variants/set.yaml:57:58: variant SRC=1: rank key '1' names rank 1, as '{SRC}' does "
        "in this variant: claim each rank once"
    ]


def test_a_rank_key_reading_an_unknown_name_is_refused_once_at_the_key(content: Path):
    plain = 'outcome: {ranks: {all: {stdout: "{sent}\\n"}}}'
    unknown = 'outcome: {ranks: {"{OP}": {stdout: "{sent}\\n"}}}'
    break_file(content / "set.yaml", plain, unknown)
    assert errors(content) == [
        "variants/set.yaml:57:27: rank key '{OP}': 'OP' reads unknown name(s) ['OP']; "
        "known: ['SRC', 'sent']"
    ]


def test_a_rank_key_known_only_per_variant_is_refused_in_an_item_without_params(
    tmp_path: Path,
):
    target = tmp_path / "rank-beyond-nproc"
    shutil.copytree(FIXTURE.parent / "broken" / "rank-beyond-nproc", target)
    break_file(target / "set.yaml", '"2": {stdout: "1.0\\n"}', 'others: {stdout: "1.0\\n"}')
    assert errors(target) == [
        "rank-beyond-nproc/set.yaml:23:51: rank key 'others' is rendered per variant: it needs "
        'the item\'s `params:`; here name the rank ("0", "1") or all'
    ]


TRANSFORMED = "        feedback: The source is rank {SRC}, not rank 0.\n"  # broadcast-src's B


def test_a_transform_the_key_would_make_true_is_refused_at_each_variant(content: Path):
    # Every rank prints the source's value: "every rank gets what the source gets" is the key.
    distractor = (
        '      - id: C\n        text: rank {SRC}\n        as_if_outcome: "every-rank-like-{SRC}"\n'
    )
    break_file(content / "set.yaml", TRANSFORMED, TRANSFORMED + distractor)
    assert errors(content) == [
        f"variants/set.yaml:63:9: variant SRC={n}: every-rank-like-{n}: the key has no rank "
        f"print anything but what rank {n} prints, so the misconception would be true"
        for n in (0, 1, 2)
    ]


def test_a_transform_that_applies_in_every_variant_loads_and_an_unknown_one_is_refused(
    content: Path,
):
    distractor = (
        '      - id: C\n        text: only rank {SRC}\n        as_if_outcome: "only-rank-{SRC}"\n'
    )
    break_file(content / "set.yaml", TRANSFORMED, TRANSFORMED + distractor)
    assert errors(content) == []
    break_file(content / "set.yaml", '"only-rank-{SRC}"', '"only-one-{SRC}"')
    (found,) = errors(content)
    assert found.startswith(
        "variants/set.yaml:63:9: as_if_outcome 'only-one-{SRC}' names no transform; known: "
    )


def test_a_transform_in_an_item_without_params_is_refused(tmp_path: Path):
    target = tmp_path / "rank-beyond-nproc"
    shutil.copytree(FIXTURE.parent / "broken" / "rank-beyond-nproc", target)
    break_file(
        target / "set.yaml",
        'outcome: {ranks: {"0": {stdout: "0.0\\n"}, "2": {stdout: "1.0\\n"}}}',
        "as_if_outcome: rank-order",
    )
    assert errors(target) == [
        "rank-beyond-nproc/set.yaml:23:9: as_if_outcome derives a distractor in each variant: "
        "it needs the item's `params:`; here write the distractor's outcome"
    ]


def test_a_topics_own_parameterised_item_is_checked_like_a_sets(tmp_path: Path):
    from tests.modes.test_variants_untimed import OWN_ITEM

    (tmp_path / "own").mkdir()
    topic = tmp_path / "own" / "topic.yaml"
    topic.write_text(OWN_ITEM)
    assert errors(tmp_path / "own") == []
    # Unchecked, this placeholder would fail only when a learner's page rendered the variant.
    break_file(topic, '    explanation: "({A} + {B}) / 2 = {mean}"', '    explanation: "{median}"')
    assert errors(tmp_path / "own") == [
        "own/topic.yaml:12:5: unknown name(s) ['median'] in {…}; known: ['A', 'B', 'mean']"
    ]


def test_a_lesson_check_takes_no_params_so_it_never_shows_a_variant():
    from pydantic import ValidationError

    from app.kinds.choice import ChoiceItem

    question = {
        "id": "q", "kind": "choice", "category": "Conceptual", "difficulty": "beginner",
        "title": "t", "prompt": "p", "explanation": "e", "answer": "A",
        "options": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}],
    }  # fmt: skip
    ChoiceItem.model_validate(question)
    with pytest.raises(ValidationError, match="params"):
        ChoiceItem.model_validate({**question, "params": {"N": [1, 2]}})

"""Variants of a parameterised item: enumeration, stable keys, rendering, and the safe
expressions that texts and distractors are computed with."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.challenges import expressions, variants
from app.challenges.loader import load_file
from app.kinds.numeric import NumericItem
from app.kinds.predict_output import PredictOutputItem
from tests.conftest import TEST_CHALLENGES

FIXTURE = TEST_CHALLENGES.parent / "variants" / "set.yaml"


def loaded_items() -> dict[str, object]:
    loaded, errors = load_file(FIXTURE, "set.yaml")
    assert errors == [] and loaded is not None
    return {item.id: item for item in loaded.challenge_set.items}


def predict(**fields: object) -> PredictOutputItem:
    data: dict[str, object] = {
        "id": "op",
        "kind": "predict_output",
        "category": "Predict Output",
        "difficulty": "beginner",
        "title": "t",
        "prompt": "{nproc} ranks, {OP}",
        "explanation": "e",
        "code": 'OP = "SUM"\nprint(OP)\n',
        "params": {"nproc": [2, 3], "OP": ["SUM", "MAX"]},
        "options": [
            {"id": "A", "text": "{OP}", "outcome": {"ranks": {"all": {"stdout": "{OP}\n"}}}},
            {"id": "B", "text": "none", "outcome": {"hangs": True}},
        ],
        "answer": "A",
    }
    data.update(fields)
    return PredictOutputItem.model_validate(data)


def test_a_plain_item_has_one_variant_whose_key_is_empty_and_renders_as_itself():
    item = predict(params=None, prompt="p", options=[
        {"id": "A", "text": "a", "outcome": {"hangs": True}},
        {"id": "B", "text": "b", "outcome": {"hangs": False}},
    ])  # fmt: skip
    assert variants.variants_of(item) == (variants.Variant("", {}, ""),)
    assert variants.render(item, "") is item


def test_the_variants_are_the_full_product_in_order_with_stable_twelve_hex_keys():
    found = variants.variants_of(predict())
    assert [v.label for v in found] == [
        "nproc=2, OP=SUM", "nproc=2, OP=MAX", "nproc=3, OP=SUM", "nproc=3, OP=MAX",
    ]  # fmt: skip
    assert all(len(v.key) == 12 and int(v.key, 16) >= 0 for v in found)
    assert len({v.key for v in found}) == 4
    # The key hashes the item id with the values: the same values of another item differ.
    assert variants.variant_key("op", {"OP": "SUM", "nproc": 2}) == found[0].key
    assert variants.variant_key("other", {"OP": "SUM", "nproc": 2}) != found[0].key


def test_more_combinations_than_the_cap_give_a_deterministic_sample_of_the_cap():
    item = predict(params={"nproc": [1, 2, 3, 4, 5, 6, 7, 8], "OP": ["SUM", "MAX", "MIN"]})
    first, again = variants.variants_of(item), variants.variants_of(item)
    assert len(first) == variants.CAP < variants.count(item) == 24
    assert first == again
    assert len({v.key for v in first}) == variants.CAP


def test_render_rewrites_the_assignment_sets_nproc_and_fills_every_text():
    item = predict()
    key = variants.variants_of(item)[3].key  # nproc=3, OP=MAX
    rendered = variants.render(item, key)
    assert rendered.code == 'OP = "MAX"\nprint(OP)\n'
    assert rendered.code_file is None and rendered.launch.nproc == 3
    assert rendered.prompt == "3 ranks, MAX"
    assert rendered.options[0].text == "MAX"
    assert rendered.options[0].outcome.ranks["all"].stdout == "MAX\n"


def test_an_unknown_key_is_a_key_error():
    with pytest.raises(KeyError):
        variants.render(predict(), "000000000000")


def test_the_rewrite_touches_only_the_assignment_not_other_mentions_of_the_value():
    source = 'OP = "SUM"  # the op\nprint("SUM", OP)\nlabel: str = "SUM"\n'
    assert variants.rewrite(source, {"OP": "MAX", "label": "é"}) == (
        'OP = "MAX"  # the op\nprint("SUM", OP)\nlabel: str = "é"\n'
    )
    # The result is still the Python the learner reads.
    ast.parse(variants.rewrite(source, {"OP": [1, 2.5, True]}))
    with pytest.raises(KeyError):
        variants.rewrite(source, {"MISSING": 1})


def test_an_as_if_distractor_is_the_key_re_rendered_under_the_misconception():
    item = loaded_items()["all-reduce-op"]
    by_label = {v.label: v.key for v in variants.variants_of(item)}
    rendered = variants.render(item, by_label["nproc=4, OP=SUM"])
    key, off_by_one = rendered.options[0], rendered.options[1]
    assert key.text == "`10.0` on every rank"
    assert off_by_one.text == "`6.0` on every rank"  # ranks counted from 0: 0 + 1 + 2 + 3
    assert off_by_one.outcome.ranks["all"].stdout == "6.0\n"
    assert off_by_one.feedback.startswith("That counts ranks from 0")


def test_a_file_snippet_is_rewritten_from_the_file_the_loader_read():
    item = loaded_items()["broadcast-src"]
    rendered = variants.render(item, variants.variants_of(item)[2].key)
    assert "SRC = 2\n" in rendered.code and "SRC = 1" not in rendered.code
    assert "rank 2" in rendered.title


def test_a_numeric_variant_computes_its_answer():
    item = loaded_items()["mean-of-values"]
    assert isinstance(item, NumericItem)
    answers = {v.label: variants.render(item, v.key).answer for v in variants.variants_of(item)}
    assert answers["nproc=4, VALUES=[2.0, 4.0, 6.0, 10.0]"] == 5.5
    assert answers["nproc=2, VALUES=[1.0, 2.0, 3.0, 4.0]"] == 1.5


def test_expressions_allow_arithmetic_and_a_few_functions_but_nothing_else():
    env = {"nproc": 4, "VALUES": [1.0, 2.0]}
    assert expressions.evaluate("sum(range(1, nproc + 1))", env) == 10
    assert expressions.evaluate("[v * 2 for v in VALUES if v > 1]", env) == [4.0]
    assert expressions.evaluate("'a' if nproc > 3 else 'b'", env) == "a"
    assert expressions.names("[v for v in VALUES] + [nproc]") == {"VALUES", "nproc"}
    for hostile in (
        "__import__('os').system('true')",
        "VALUES.__class__",
        "open('/etc/passwd')",
        "(lambda: 1)()",
        "range(10 ** 9)",
        "'x' * 10 ** 6",
        "2 ** 2 ** 2 ** 2 ** 2",
    ):
        with pytest.raises(expressions.ExpressionError):
            expressions.evaluate(hostile, env)


def test_loading_the_fixture_set_keeps_each_parameterised_snippet_for_render(tmp_path: Path):
    items = loaded_items()
    assert variants.source_of(items["all-reduce-op"]).startswith("import torch")  # type: ignore[union-attr]


def test_a_debug_items_fix_gets_the_same_constants_as_its_snippet():
    from app.kinds.debug import DebugItem

    item = DebugItem.model_validate(
        {
            "id": "mismatch",
            "kind": "debug",
            "category": "Debug",
            "difficulty": "beginner",
            "title": "t",
            "prompt": "Rank 1 sends {SIZE} elements. Why does it fail?",
            "explanation": "e",
            "code": "SIZE = 3\nprint(SIZE)\n",
            "fixed_code": "SIZE = 3\nprint(SIZE, 'fixed')\n",
            "params": {"SIZE": [3, 5]},
            "failure": {"ranks": {"0": {"exception": "RuntimeError"}}},
            "options": [{"id": "A", "text": "shapes"}, {"id": "B", "text": "ranks"}],
            "answer": "A",
        }
    )
    rendered = variants.render(item, variants.variants_of(item)[1].key)
    assert rendered.code == "SIZE = 5\nprint(SIZE)\n"
    assert rendered.fixed_code == "SIZE = 5\nprint(SIZE, 'fixed')\n"
    assert rendered.prompt == "Rank 1 sends 5 elements. Why does it fail?"


def source_item(**fields: object) -> PredictOutputItem:
    """An item whose source rank is a parameter: its outcome names ranks by `{SRC}` and the
    last rank by an expression; `others` claims the rest."""
    data: dict[str, object] = {
        "code": "SRC = 1\nprint(SRC)\n",
        "params": {"nproc": [3, 4], "SRC": [0, 1]},
        "derive": {"last": "nproc - 1"},
        "prompt": "{nproc} ranks from {SRC}",
        "options": [
            {"id": "A", "text": "rank {SRC} sends", "outcome": {"ranks": {
                "{SRC}": {"stdout": "sent\n"}, "{last}": {"stdout": "last\n"},
                "others": {"stdout": "got\n"},
            }}},
            {"id": "B", "as_if": {"SRC": "nproc - 2"}, "text": "rank {SRC} sends"},
        ],
    }  # fmt: skip
    data.update(fields)
    return predict(**data)


def test_a_rank_key_in_braces_names_the_variants_rank_and_others_every_rank_left():
    item = source_item()
    by_label = {v.label: v.key for v in variants.variants_of(item)}
    rendered = variants.render(item, by_label["nproc=4, SRC=1"])
    claimed = {rank: claim.stdout for rank, claim in rendered.options[0].outcome.ranks.items()}
    assert claimed == {"0": "got\n", "1": "sent\n", "2": "got\n", "3": "last\n"}
    rendered = variants.render(item, by_label["nproc=3, SRC=0"])
    claimed = {rank: claim.stdout for rank, claim in rendered.options[0].outcome.ranks.items()}
    assert claimed == {"0": "sent\n", "1": "got\n", "2": "last\n"}


def test_an_as_if_distractor_names_ranks_as_the_misconception_would():
    item = source_item()
    by_label = {v.label: v.key for v in variants.variants_of(item)}
    believed = variants.render(item, by_label["nproc=4, SRC=0"]).options[1]
    assert believed.text == "rank 2 sends"
    claimed = {rank: claim.stdout for rank, claim in believed.outcome.ranks.items()}
    assert claimed == {"0": "got\n", "1": "got\n", "2": "sent\n", "3": "last\n"}


def test_a_rank_key_rendering_outside_the_ranks_or_onto_a_named_one_is_refused():
    item = source_item(derive={"last": "nproc"})
    with pytest.raises(variants.RankKeyError, match=r"renders to rank 3, which does not exist"):
        variants.render(item, variants.variants_of(item)[0].key)  # nproc=3, SRC=0
    item = source_item(derive={"last": "nproc - 3"})  # rank 0 with 3 ranks: SRC=0 names it too
    with pytest.raises(variants.RankKeyError, match=r"names rank 0, as '\{SRC\}' does") as error:
        variants.render(item, variants.variants_of(item)[0].key)
    assert error.value.where == ("options", 0, "outcome", "ranks", "{last}")

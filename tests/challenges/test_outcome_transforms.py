"""Named misconceptions make a distractor's outcome from the key's: each a pure function of the
key's rendered outcome and the rank count, refusing where the misconception would be true."""

from __future__ import annotations

import pytest

from app.challenges import outcome_transforms, variants
from app.challenges.outcome_transforms import TransformError, apply
from tests.challenges.test_variants import predict

EVERY_RANK = {"ranks": {"all": {"stdout": "10.0\n", "status": None}}, "hangs": None}
ONE_RANK = {"ranks": {"0": {"stdout": "0.0\n"}, "1": {"stdout": "6.0\n"}, "2": {"stdout": "0.0\n"}}}


def test_only_rank_n_claims_rank_n_alone_prints_what_the_key_has_every_rank_print():
    assert apply("only-rank-2", EVERY_RANK, 3) == {
        "ranks": {"2": {"stdout": "10.0\n", "differs_across_ranks": True}}
    }


def test_only_rank_n_refuses_a_key_where_rank_n_prints_alone_already():
    with pytest.raises(TransformError, match="no other rank print what rank 1 prints"):
        apply("only-rank-1", ONE_RANK, 3)
    with pytest.raises(TransformError, match="rank 3 does not exist on 3 ranks"):
        apply("only-rank-3", EVERY_RANK, 3)


def test_every_rank_like_n_gives_every_rank_what_the_key_gives_rank_n():
    assert apply("every-rank-like-1", ONE_RANK, 3) == {"ranks": {"all": {"stdout": "6.0\n"}}}
    with pytest.raises(TransformError, match="would be true"):
        apply("every-rank-like-1", EVERY_RANK, 3)


def test_rank_order_is_the_key_with_one_order_on_every_run():
    key = {**ONE_RANK, "order_varies": True}
    assert apply("rank-order", key, 3) == {**ONE_RANK, "order_varies": False}
    with pytest.raises(TransformError, match="already says the order is the same"):
        apply("rank-order", {**ONE_RANK, "order_varies": False}, 3)
    with pytest.raises(TransformError, match="one rank has no order"):
        apply("rank-order", ONE_RANK, 1)


def test_rank_order_refuses_a_key_where_every_rank_prints_the_same():
    # No run shows which rank printed first when all print one line (verify's varying_order).
    with pytest.raises(TransformError, match="every rank print the same, so no order"):
        apply("rank-order", EVERY_RANK, 3)


def test_unchanged_input_claims_no_two_ranks_print_the_same():
    assert apply("unchanged-input", ONE_RANK, 3) == {
        "ranks": {"all": {"differs_across_ranks": True}}
    }
    distinct = {"ranks": {"0": {"stdout": "0\n"}, "1": {"stdout": "1\n"}}}
    with pytest.raises(TransformError, match="no two ranks print the same"):
        apply("unchanged-input", distinct, 2)


def test_an_unknown_name_is_refused_listing_the_known_ones():
    with pytest.raises(TransformError, match="names no transform; known: only-rank-N, "):
        apply("only-rank", EVERY_RANK, 2)
    with pytest.raises(TransformError, match="names no transform"):
        apply("rank-order-1", EVERY_RANK, 2)


def broadcast(**fields: object):
    """Three or four ranks broadcast from SRC; each distractor's outcome is a transform's."""
    data: dict[str, object] = {
        "code": "SRC = 1\nprint(SRC)\n",
        "params": {"nproc": [3, 4], "SRC": [1, 2]},
        "derive": {"sent": "float(10 * SRC)"},
        "prompt": "{nproc} ranks from {SRC}",
        "options": [
            {"id": "A", "text": "{sent} on every rank",
             "outcome": {"order_varies": True, "ranks": {"all": {"stdout": "{sent}\n"}}}},
            {"id": "B", "text": "only rank {SRC} prints {sent}",
             "as_if_outcome": "only-rank-{SRC}"},
            {"id": "C", "text": "each keeps its own", "as_if_outcome": "unchanged-input"},
            {"id": "D", "as_if": {"SRC": "0"}, "text": "only rank 0 has it",
             "as_if_outcome": "only-rank-{SRC}"},
        ],
    }  # fmt: skip
    data.update(fields)
    return predict(**data)


def test_render_derives_each_distractors_outcome_from_the_variants_key():
    item = broadcast()
    by_label = {v.label: v.key for v in variants.variants_of(item)}
    rendered = variants.render(item, by_label["nproc=4, SRC=2"])
    only, unchanged, believed = (o.outcome for o in rendered.options[1:])
    assert only.ranks["2"].stdout == "20.0\n" and only.ranks["2"].differs_across_ranks
    assert list(only.ranks) == ["2"]
    assert list(unchanged.ranks) == ["all"] and unchanged.ranks["all"].differs_across_ranks
    # as_if first: rank 0 as the source; the key's outcome under that belief, then rank 0 alone.
    assert list(believed.ranks) == ["0"] and believed.ranks["0"].stdout == "0.0\n"
    assert rendered.options[1].text == "only rank 2 prints 20.0"


def test_the_transforms_are_listed_with_what_each_learner_believes():
    assert [t.pattern for t in outcome_transforms.TRANSFORMS] == [
        "only-rank-N", "every-rank-like-N", "rank-order", "unchanged-input",
    ]  # fmt: skip
    assert all(t.belief for t in outcome_transforms.TRANSFORMS)

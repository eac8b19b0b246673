"""The explain-it concept matcher: what counts as stating a concept, and how well it agrees
with a person on 44 hand-labelled answers."""

from __future__ import annotations

from app.kinds.explain.matching import Concept, score
from bench.bench_explain import evaluate

AVERAGE = Concept("averaged", ("gradients are averaged", "mean of the gradients"))
NO_GPU = Concept("no GPU needed", ("does not need a GPU",))


def test_a_paraphrase_in_another_order_and_inflection_covers_the_concept() -> None:
    [match] = score("Backward runs. Then DDP averages all the gradients.", [AVERAGE])
    assert match.covered
    assert match.sentence == "Then DDP averages all the gradients."
    assert match.phrasing == "gradients are averaged"


def test_a_negated_statement_does_not_cover_it_and_is_named_as_the_contradiction() -> None:
    for answer in (
        "DDP does not average the gradients.",
        "The gradients aren't averaged, they are summed.",
        "No gradient is ever averaged.",
    ):
        [match] = score(answer, [AVERAGE])
        assert not match.covered, answer
        assert match.contradicted_by == answer


def test_negation_stops_at_a_contrast() -> None:
    [match] = score("It is not summed but averaged over the gradients.", [AVERAGE])
    assert match.covered


def test_a_negative_phrasing_needs_the_negation() -> None:
    assert score("DDP on gloo doesn't need a GPU at all.", [NO_GPU])[0].covered
    assert not score("You need a GPU for DDP.", [NO_GPU])[0].covered


def test_words_far_apart_or_in_other_sentences_do_not_cover_it() -> None:
    far = "Gradients flow backwards through every layer of the network and are finally averaged."
    assert not score(far, [AVERAGE])[0].covered
    assert not score("Gradients flow backwards. Loss is averaged.", [AVERAGE])[0].covered


def test_a_bare_list_of_keywords_covers_nothing() -> None:
    assert not score("gradients, average, all-reduce, world size", [AVERAGE])[0].covered


def test_compounds_match_their_last_part_but_no_sync_is_not_a_sync() -> None:
    batch = Concept("own batch", ("each rank computes gradients on its own batch",))
    assert score("Each rank computes gradients on its own mini-batch.", [batch])[0].covered
    synced = Concept("synchronised", ("gradients are synchronized",))
    assert not score("Inside no_sync, gradients accumulate.", [synced])[0].covered


def test_agreement_with_the_hand_labelled_answers() -> None:
    # The figures docs/benchmarks.md quotes (bench/bench_explain.py prints them, with each
    # disagreement).
    tally = evaluate()
    assert tally.answers >= 40
    assert tally.precision >= 0.9, tally
    assert tally.recall >= 0.65, tally

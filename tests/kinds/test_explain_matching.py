"""The explain-it scorer: what credits a concept, what is told "opposite", and where it says it
is unsure instead of guessing."""

from __future__ import annotations

from app.kinds.explain.matching import Concept, Verdict, score
from bench.bench_explain import shipped_concepts

AVERAGE = Concept("averaged", ("gradients are averaged", "mean of the gradients"))
NO_GPU = Concept("no GPU needed", ("does not need a GPU",))
NEW_GROUP = Concept(
    "every rank calls new_group (members or not), in the same order",
    ("every rank calls new_group", "all ranks must call new_group", "same order", "not a member"),
)
ENV = Concept(
    "each process gets its RANK and the WORLD_SIZE from environment variables",
    ("environment variable", "WORLD_SIZE", "gets its rank"),
)
GIL = Concept("DataParallel is one process whose threads contend for the GIL", ("GIL", "threads"))


def verdict(answer: str, concept: Concept) -> Verdict:
    [match] = score(answer, [concept])
    return match.verdict


def test_a_paraphrase_in_another_order_and_inflection_is_credited() -> None:
    [match] = score("Backward runs. Then DDP averages all the gradients.", [AVERAGE])
    assert match.verdict is Verdict.CREDITED and match.covered
    assert match.sentence == "Then DDP averages all the gradients."
    assert match.phrasing == "gradients are averaged"


def test_a_confident_negation_is_the_opposite_and_names_its_sentence() -> None:
    for answer in (
        "DDP does not average the gradients.",
        "The gradients aren't averaged.",
        "I don't think the gradients are averaged.",
    ):
        [match] = score(answer, [AVERAGE])
        assert match.verdict is Verdict.OPPOSITE, answer
        assert match.sentence == answer and not match.covered


def test_an_affirmation_is_never_told_it_said_the_opposite() -> None:
    # Issue 37: "members or not" made this an "opposite".
    answer = "every rank must call new_group in the same order, members or not"
    assert verdict(answer, NEW_GROUP) is Verdict.CREDITED
    assert verdict("Members or not, every rank calls new_group.", NEW_GROUP) is Verdict.CREDITED


def test_a_negated_mention_earns_nothing() -> None:
    # Issue 37: this earned the concept. A keyword under a negation is not credited, and one
    # keyword is too little to say the learner claimed the opposite.
    assert verdict("torchrun does not set RANK or WORLD_SIZE", ENV) is Verdict.UNSURE
    assert verdict("Each process reads its WORLD_SIZE from an environment variable.", ENV) is (
        Verdict.CREDITED
    )


def test_a_bare_keyword_list_is_credited_nothing() -> None:
    for answer in (
        "gradients, average, all-reduce, world size",
        "GIL, threads, one process per GPU",
        "averaged gradients, ranks, world size, sync",
    ):
        assert verdict(answer, AVERAGE if "gradient" in answer else GIL) is not Verdict.CREDITED
    # The same words as a statement are credited.
    assert verdict("Its threads contend for the GIL.", GIL) is Verdict.CREDITED


def test_a_keyword_alone_is_not_a_claim_about_its_concept() -> None:
    # One word of a long concept needs another word of that concept beside it.
    assert verdict("DDP avoids the GIL.", GIL) is Verdict.UNSURE
    assert verdict("DataParallel threads contend for the GIL.", GIL) is Verdict.CREDITED


def test_hedges_still_credit_a_right_claim() -> None:
    for answer in (
        "I think the gradients are averaged.",
        "Maybe the gradients are averaged.",
        "I'm not sure, but the gradients are averaged.",
    ):
        assert verdict(answer, AVERAGE) is Verdict.CREDITED, answer


def test_questions_and_conditions_are_no_confident_claims() -> None:
    assert verdict("Are the gradients averaged?", AVERAGE) is Verdict.UNSURE
    assert verdict("If the gradients are not averaged, training diverges.", AVERAGE) is (
        Verdict.UNSURE
    )


def test_negation_scope_ends_at_its_clause_and_double_negatives_cancel() -> None:
    assert verdict("It is not summed but averaged over the gradients.", AVERAGE) is (
        Verdict.CREDITED
    )
    assert verdict("Nothing is summed, the gradients are averaged.", AVERAGE) is Verdict.CREDITED
    assert verdict("It is not true that the gradients are never averaged.", AVERAGE) is (
        Verdict.CREDITED
    )
    # "without" reaches the word it governs only.
    order = Concept("same order", ("repeats the same order",))
    assert verdict("Without set_epoch every epoch repeats the same order.", order) is (
        Verdict.CREDITED
    )
    compiled = Concept("compiled on the first call", ("compiled at the first call",))
    assert verdict("Nothing is compiled until the first call.", compiled) is not Verdict.OPPOSITE


def test_a_negative_phrasing_needs_the_negation() -> None:
    assert verdict("DDP on gloo doesn't need a GPU at all.", NO_GPU) is Verdict.CREDITED
    assert verdict("You need a GPU for DDP.", NO_GPU) is not Verdict.CREDITED


def test_words_far_apart_or_in_other_sentences_do_not_credit() -> None:
    far = "Gradients flow backwards through every layer of the network and are finally averaged."
    assert verdict(far, AVERAGE) is not Verdict.CREDITED
    assert verdict("Gradients flow backwards. Loss is averaged.", AVERAGE) is not (Verdict.CREDITED)


def test_a_sentence_that_contradicts_one_concept_credits_no_other() -> None:
    whole = Concept("DDP keeps a full replica", ("DDP does not split the model",))
    split = Concept("split the layers across GPUs", ("split the model across GPUs",))
    answer = "DDP splits the model across the GPUs, so each GPU holds part of it."
    whole_match, split_match = score(answer, [whole, split])
    assert whole_match.verdict is Verdict.OPPOSITE
    assert split_match.verdict is Verdict.UNSURE


def test_compounds_and_dotted_names_match_their_last_part_but_no_sync_is_not_a_sync() -> None:
    batch = Concept("own batch", ("each rank computes gradients on its own batch",))
    assert score("Each rank computes gradients on its own mini-batch.", [batch])[0].covered
    reduce = Concept("use all_reduce", ("all_reduce",))
    assert score("You call dist.all_reduce(g, op=SUM) on it.", [reduce])[0].covered
    synced = Concept("synchronised", ("gradients are synchronized",))
    assert not score("Inside no_sync, gradients accumulate.", [synced])[0].covered


def test_a_list_after_a_verb_is_governed_by_it_but_not_after_a_negation() -> None:
    saved = Concept("optimizer state and step", ("optimizer state and the step",))
    held = "The checkpoint must hold the model, the optimizer state and the step."
    assert verdict(held, saved) is Verdict.CREDITED
    assert verdict("It does not hold the model, the optimizer state and the step.", saved) is (
        Verdict.UNSURE
    )


def test_a_compound_is_no_support_for_its_own_keyword() -> None:
    minus_one = Concept(
        "non-members get rank -1 in the group", ("non-member", "get_rank returns -1")
    )
    answer = "The new_group must every rank call, also the non-members, and in the same order."
    assert verdict(answer, minus_one) is not Verdict.CREDITED


def test_saying_who_calls_new_group_is_no_claim_about_a_non_members_rank() -> None:
    minus_one = shipped_concepts()["explain-new-group"][3]
    for answer in (
        "Non-members must call new_group too, otherwise it hangs.",
        "You don't have to be a member to call new_group.",
    ):
        assert verdict(answer, minus_one) is not Verdict.CREDITED, answer
    assert verdict("On rank 2, get_rank(pair) returns -1.", minus_one) is Verdict.CREDITED


def test_words_common_to_every_concept_do_not_say_whose_claim_it_is() -> None:
    processes = Concept("DDP runs one process per GPU", ("one process per GPU",))
    assert verdict("DataParallel uses one process per GPU.", processes) is Verdict.UNSURE
    assert verdict("DDP runs one process per GPU.", processes) is Verdict.CREDITED

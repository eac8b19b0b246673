"""The order a learner sees options in: shuffled by the showing's seed, stable, pins kept."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from app.challenges.schema import ChoiceItem
from app.kinds import order


def item(pins: dict[str, str] | None = None, answer: str | list[str] = "A") -> ChoiceItem:
    pins = pins or {}
    return ChoiceItem.model_validate(
        {
            "id": "q",
            "kind": "choice",
            "category": "Conceptual",
            "difficulty": "beginner",
            "title": "T",
            "prompt": "P",
            "explanation": "E",
            "options": [
                {
                    "id": letter,
                    "text": letter.lower(),
                    **({"pin": pins[letter]} if letter in pins else {}),
                }
                for letter in "ABCDE"
            ],
            "answer": answer,
        }
    )


def shown(choice: ChoiceItem, seed: str | None) -> str:
    return "".join(option.id for option in order.arrange(choice.options, seed))


def test_the_same_seed_gives_the_same_order_and_seeds_differ_by_secret_and_ids():
    assert shown(item(), "s1") == shown(item(), "s1")
    assert order.seed("k", "attempt", 7, 1) == order.seed("k", "attempt", 7, 1)
    assert order.seed("k", "attempt", 7, 1) != order.seed("k", "attempt", 8, 1)
    assert order.seed("k", "attempt", 7, 1) != order.seed("other", "attempt", 7, 1)


def test_without_a_seed_the_file_order_is_kept():
    assert shown(item(), None) == "ABCDE"


def test_every_option_reaches_the_first_place_about_equally_often():
    firsts = Counter(shown(item(), order.seed("k", n))[0] for n in range(5000))
    assert set(firsts) == set("ABCDE")
    assert all(800 < count < 1200 for count in firsts.values()), firsts  # 1000 expected


def test_pinned_options_keep_their_place():
    pinned = item({"E": "last", "A": "first"})
    orders = {shown(pinned, order.seed("k", n)) for n in range(200)}
    assert all(o[0] == "A" and o[-1] == "E" for o in orders)
    assert len(orders) == 6  # the three in between take every order


def test_letters_follow_the_shown_order():
    ordered = order.arrange(item().options, "s")
    letters = order.letters(ordered)
    assert [letters[option.id] for option in ordered] == list("ABCDE")


def test_an_item_needs_two_unpinned_options_and_a_distractor():
    with pytest.raises(ValidationError, match="all but two"):
        item({"A": "first", "B": "first", "C": "last", "D": "last"})
    with pytest.raises(ValidationError, match="every option is a key"):
        item(answer=list("ABCDE"))


def test_an_options_token_is_opaque_and_its_showings_own():
    choice = item()
    seeds = [order.item_seed(order.seed("s", "attempt", n, 1), "q") for n in range(50)]
    for seed in seeds:
        tokens = [order.token(seed, option.id) for option in choice.options]
        assert len(set(tokens)) == len(tokens) and not set(tokens) & set("ABCDE")
        assert tokens == [order.token(seed, option.id) for option in choice.options]  # stable
    # Option A's token says nothing of its id: it differs in every showing.
    assert len({order.token(seed, "A") for seed in seeds}) == len(seeds)
    assert order.token(None, "A") == "A"  # no seed (an author's preview): the id itself


def test_decoding_reads_this_showings_tokens_and_ids_and_leaves_the_rest_unknown():
    choice = item()
    mine, theirs = order.item_seed("mine", "q"), order.item_seed("theirs", "q")
    sent = [order.token(mine, "C"), "B", order.token(theirs, "A"), "Z"]
    assert order.decode(sent, choice.options, mine) == ["C", "B", order.token(theirs, "A"), "Z"]

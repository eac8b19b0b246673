"""The explain-it scorer on the labelled corpus of learner answers to the shipped items: a wrong
"opposite" and a wrong credit each stay under 2 % of the answers, held-out items included."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from app.kinds.explain.matching import Verdict
from bench.bench_explain import CORPUS, Tally, evaluate, shipped_concepts

LIMIT = 0.02


@pytest.fixture(scope="module")
def tally() -> Tally:
    """The whole corpus scored once."""
    return evaluate()


def test_the_corpus_answers_every_shipped_item_in_every_style() -> None:
    entries = YAML(typ="safe").load(CORPUS.read_text())["items"]
    shipped = shipped_concepts()
    assert {entry["item"] for entry in entries} == set(shipped)
    answers = [answer for entry in entries for answer in entry["answers"]]
    assert len(answers) >= 150
    styles = {answer["style"] for answer in answers}
    assert {"paraphrase", "negation", "hedge", "salad", "partial", "order", "failure"} <= styles
    for entry in entries:
        count = len(shipped[entry["item"]])
        for answer in entry["answers"]:
            labels = [*answer.get("says", []), *answer.get("denies", [])]
            assert all(1 <= n <= count for n in labels), (entry["item"], answer["text"])
            assert len(labels) == len(set(labels)), answer["text"]


def test_wrong_credit_and_wrong_opposite_stay_under_two_percent(tally: Tally) -> None:
    # The held-out items' table is printed (docs/design.md quotes it); the limit holds for the
    # whole corpus: one error in the 40 held-out answers is already 2.5 %.
    print(f"\nheld out:\n{evaluate(held_out=True).table()}")
    print(f"\nall:\n{tally.table()}")
    assert tally.rate(Verdict.CREDITED) < LIMIT, tally.errors
    assert tally.rate(Verdict.OPPOSITE) < LIMIT, tally.errors


def test_credit_is_precise_and_still_finds_most_stated_concepts(tally: Tally) -> None:
    assert tally.precision(Verdict.CREDITED) >= 0.97, tally.table()
    assert tally.precision(Verdict.OPPOSITE) >= 0.9, tally.table()
    assert tally.recall(Verdict.CREDITED) >= 0.8, tally.table()

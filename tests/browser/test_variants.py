"""A guest's first and second timed attempts of a set show different variants of its items,
each with the numbers its own Run it prints; a reload keeps the variant."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from app.challenges import variants
from app.challenges.loader import load_path
from app.challenges.schema import ChoiceBase, ItemBase, NumericItem
from tests.conftest import FIXTURES
from tests.support.options import check, plain

pytestmark = pytest.mark.browser
SET = next(
    loaded.challenge_set
    for loaded in load_path(FIXTURES / "variants").sets
    if loaded.challenge_set.id == "variant-basics"
)


def words(text: str) -> str:
    return " ".join(text.split())


def shown_variant(page, item: ItemBase) -> variants.Variant:
    """The one variant of `item` whose title and prompt the page shows."""
    shown = words(page.locator("main").inner_text())
    found = []
    for variant in variants.variants_of(item):
        rendered = variants.render(item, variant.key)
        texts = (plain(rendered.title), plain(rendered.prompt))
        if all(words(text) in shown for text in texts):
            found.append(variant)
    assert len(found) == 1, [variant.label for variant in found]
    return found[0]


def answer_right(page, rendered: ItemBase) -> None:
    if isinstance(rendered, NumericItem):
        page.get_by_test_id("numeric-input").fill(str(rendered.answer))
    else:
        assert isinstance(rendered, ChoiceBase)
        check(page, rendered, *sorted(rendered.answer_ids))
    page.get_by_test_id("submit").click()
    expect(page.get_by_test_id("verdict")).to_have_text(re.compile("^✓ Correct"))


def take_the_set(page) -> list[variants.Variant]:
    """One timed attempt answered right; the variants it showed. The first question is run."""
    page.goto(f"/sets/{SET.id}")
    page.get_by_test_id("start").click()
    shown = []
    for number, item in enumerate(SET.items, start=1):
        page.wait_for_url(re.compile(rf"/q/{number}$"))
        variant = shown_variant(page, item)
        if number == 1:
            page.reload()  # a reload shows the same variant
            assert shown_variant(page, item) == variant
        rendered = variants.render(item, variant.key)
        answer_right(page, rendered)
        if number == 1:  # Run it runs the variant shown: its ranks print its own numbers
            nproc = int(variant.params["nproc"])  # type: ignore[call-overload]
            result = variants.environment(item, variant.params)["result"]
            page.get_by_test_id("run-button").click()
            expect(page.get_by_test_id("run-summary")).to_contain_text("ok ·", timeout=30_000)
            for rank in range(nproc):
                expect(page.get_by_test_id(f"rank-{rank}")).to_contain_text(str(result))
            expect(page.get_by_test_id(f"rank-{nproc}")).to_have_count(0)
        shown.append(variant)
        page.get_by_test_id("next").click()
    page.wait_for_url(re.compile(r"/results$"))
    return shown


def test_a_retake_shows_other_variants_each_running_its_own_numbers(page):
    page.goto("/")
    page.get_by_test_id("start-guest").click()
    first = take_the_set(page)
    expect(page.get_by_test_id("badge")).to_be_visible()
    second = take_the_set(page)
    assert all(a.key != b.key for a, b in zip(first, second, strict=True))
    expect(page.get_by_test_id("badge")).to_be_visible()  # fresh variants: first sight again

"""A card's default title is its front's first line with its inline Markdown whole, so the title
renderer shows code as code (no stray backticks, no text between two spans taken for code)."""

from __future__ import annotations

from app.kinds.flashcard import FlashcardItem, title_from_front


def card(front: str, **fields: str) -> FlashcardItem:
    return FlashcardItem.model_validate({"id": "c", "front": front, "back": "b", **fields})


def test_a_title_starting_with_code_keeps_its_backticks():
    front = "`all_gather` or `gather`: who ends up with the list?"
    assert card(front).title == front


def test_a_heading_marker_is_dropped_and_bold_kept_for_the_renderer():
    assert title_from_front("\n## What is a **rank**?\nmore") == "What is a **rank**?"


def test_a_long_front_is_cut_and_a_code_span_the_cut_opened_is_closed():
    title = title_from_front("Why " + "`" + "x" * 100 + "`")
    assert title.endswith("`…") and title.count("`") == 2 and len(title) <= 80
    assert title_from_front("y" * 100) == "y" * 77 + "…"


def test_a_card_knows_whether_its_title_only_repeats_its_front():
    assert card("What is a rank?").title_in_front
    assert card("y" * 100).title_in_front  # cut, still the front's line
    assert not card("What is a rank?", title="Ranks").title_in_front

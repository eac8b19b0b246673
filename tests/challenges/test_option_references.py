"""Learner text may not name an option by its letter or place (options are shuffled for each
learner), nor another item by its place (items are drawn alone in quizzes and review)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges.content_checks import option_references
from app.challenges.loader import load_path
from tests.conftest import TEST_CHALLENGES


@pytest.mark.parametrize(
    "text",
    [
        "Option B is the trap here.",
        "Unlike answer (C), this one waits.",
        "B is wrong: the ranks never meet.",
        "Both A and B print the same.",
        "Pick the first option if unsure.",
        "This is the case the next item shows.",
        "See a later item for the DETAIL mode.",
        "As the previous question showed, it hangs.",
        "The option above says it raises.",
        "The first two options ignore rank 1.",
    ],
)
def test_a_letter_or_a_place_is_flagged(text):
    assert option_references(text), text


@pytest.mark.parametrize(
    "text",
    [
        "A rank that never calls `all_reduce` hangs the others.",  # "A" the article
        "Set `B = 2` and `A or B` in code: code is not prose.",
        "```python\nif A and B:\n    x = 1\n```",
        "The other options ignore rank 1.",
        "Your first answer counts most.",
        "Plan A is to wait; it raises a RuntimeError.",
        "The first rank to arrive waits for the others.",
    ],
)
def test_prose_about_something_else_is_not_flagged(text):
    assert option_references(text) == [], text


def test_validate_reports_a_letter_reference_at_its_position(tmp_path: Path):
    content = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES / "basics", content / "basics")
    set_file = content / "basics" / "set.yaml"
    text = set_file.read_text()
    assert "FEEDBACK-C-WORLD That" in text
    set_file.write_text(
        text.replace("FEEDBACK-C-WORLD That", "FEEDBACK-C-WORLD Unlike option B that")
    )
    report = load_path(content, display_root=tmp_path)
    [error] = [str(error) for error in report.errors]
    assert "items.0.options.2.feedback" in error and "'option B'" in error
    assert "shuffled" in error

"""A shipped lesson's check is a check (issue 37, item 5): a wrong pick says why and links the
section to re-read, the retry asks questions not asked before, and a learner who tries the
options in turn does not pass within two tries. On the live server's copy of challenges/."""

from __future__ import annotations

import re

import pytest
import yaml
from playwright.sync_api import Page, expect

from app.config import ROOT
from tests.browser.test_lessons import asked

pytestmark = pytest.mark.browser
TOPIC = "collectives"
LESSON = yaml.safe_load((ROOT / "challenges" / TOPIC / "topic.yaml").read_text())["lesson"]
QUESTIONS = {question["id"]: question for question in LESSON["check"]}
SECTIONS = {section["id"]: number for number, section in enumerate(LESSON["sections"], 1)}


def shown(markdown: str) -> str:
    """The text as the page shows it, near enough to find: code spans lose their backticks."""
    return " ".join(markdown.replace("`", "").split())


def exactly(text: str) -> re.Pattern[str]:
    """The whole text, not a part of it ("Every rank" is a part of "Every rank but 0")."""
    return re.compile(rf"^\s*{re.escape(text)}\s*$")


def option_text(question_id: str, option_id: str) -> str:
    options = QUESTIONS[question_id]["options"]
    return shown(next(option["text"] for option in options if option["id"] == option_id))


def try_in_turn(page: Page, round_number: int) -> dict[str, str]:
    """Pick, for each question asked, the option `round_number` places from the end of the
    content's own order (so the picks do not depend on the shuffle), and submit."""
    picks = {}
    for question_id in asked(page):
        option_id = QUESTIONS[question_id]["options"][-1 - round_number]["id"]
        picks[question_id] = option_id
        question = page.locator(f'[data-testid="check-question"][data-question="{question_id}"]')
        label = question.get_by_test_id("check-option").filter(
            has=page.locator(".text", has_text=exactly(option_text(question_id, option_id)))
        )
        expect(label).to_have_count(1)
        label.click()
    page.get_by_test_id("check-submit").click()
    return picks


def test_a_shipped_lesson_check_explains_wrong_picks_and_a_retry_asks_other_questions(
    page: Page,
):
    page.goto(f"/topics/{TOPIC}/lesson")
    first = asked(page)
    picks = try_in_turn(page, 0)
    expect(page.get_by_test_id("check-not-yet")).to_be_visible()
    feedback = page.get_by_test_id("check-review").get_by_test_id("check-feedback")
    expect(feedback).to_have_count(len(first))
    missed = []
    for index, question_id in enumerate(first):
        block = feedback.nth(index)
        options = QUESTIONS[question_id]["options"]
        option = next(o for o in options if o["id"] == picks[question_id])
        if option["id"] == QUESTIONS[question_id]["answer"]:
            continue
        missed.append(question_id)
        expect(block.get_by_test_id("wrong-pick")).to_contain_text(shown(option["text"]))
        expect(block.get_by_test_id("pick-why")).to_be_visible()  # why that belief is wrong
        why = " ".join(shown(option.get("feedback", "")).split()[:6])
        expect(block.get_by_test_id("pick-why")).to_contain_text(why)
        section = LESSON["reread"][question_id]
        link = block.get_by_test_id("reread").get_by_role("link")
        expect(link).to_have_attribute("href", f"#section-{section}")
        expect(link).to_contain_text(f"{SECTIONS[section]}.")
    assert missed, "picking the last option everywhere missed nothing"

    retry = asked(page)
    assert set(retry) - set(first), f"the retry asked {retry} again after {first}"
    assert not set(retry) & set(missed), "a missed question came back while others were left"

    # Picking the options in turn (the last one, then the one before) passes neither try.
    try_in_turn(page, 1)
    expect(page.get_by_test_id("check-not-yet")).to_be_visible()
    expect(page.get_by_test_id("check-passed")).to_have_count(0)

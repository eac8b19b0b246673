"""A learner works through a lab in a real browser: edits the starter in the code editor, runs
it across two real ranks and watches both panes fill, fails a check, fixes the code, passes,
answers the step's question and reaches the next step; a reload keeps the draft; Stop ends a
run that would spin until its deadline.

The lab is tests/fixtures/labs/hello (`hello-ranks`), served by the live app with its real
(sandboxed) executor.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.challenges.schema import ChoiceBase
from tests.support.options import check

pytestmark = pytest.mark.browser
LAB = "/labs/hello-ranks"
WRONG = 'import os\nprint("hello")\n'
FIXED = (
    "import os\n"
    'rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])\n'
    'print(f"hello from rank {rank} of {world}")\n'
)


def replace_code(page: Page, code: str) -> None:
    """Select everything in the editor and type the new code (as text, like a paste)."""
    editor = page.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)


def judged(page: Page) -> None:
    """Wait until the run has ended and the page has reloaded with its judged checks."""
    expect(page.locator("form.lab-run")).to_have_attribute("data-state", "idle", timeout=30_000)


def start_lab(page: Page) -> None:
    page.goto(LAB)
    page.get_by_test_id("start-guest").click()
    page.wait_for_url(re.compile(r"/labs/hello-ranks$"))
    page.get_by_test_id("lab-continue").click()
    page.wait_for_url(re.compile(r"/steps/print-rank$"))
    expect(page.locator(".cm-editor")).to_be_visible()  # CodeMirror replaced the textarea


def test_a_learner_fails_a_check_fixes_it_passes_and_reaches_the_next_step(page: Page):
    start_lab(page)
    replace_code(page, WRONG + "# my edit\n")
    page.get_by_test_id("nproc").select_option("2")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("rank-0").locator("pre.out")).to_contain_text("hello")
    expect(page.get_by_test_id("rank-1").locator("pre.out")).to_contain_text("hello")
    judged(page)  # the page reloads once the run is judged
    checks = page.get_by_test_id("check")
    expect(checks.first).to_have_attribute("data-passed", "no")
    # The draft survived that reload (it is the code that ran).
    expect(page.locator(".cm-content")).to_contain_text("# my edit")
    page.reload()
    expect(page.locator(".cm-content")).to_contain_text("# my edit")

    replace_code(page, FIXED)
    page.keyboard.press("Control+Enter")  # runs, like the Run button
    expect(page.get_by_test_id("rank-1").locator("pre.out")).to_contain_text(
        "hello from rank 1 of 2"
    )
    judged(page)
    expect(checks.first).to_have_attribute("data-passed", "yes")
    expect(checks.nth(1)).to_have_attribute("data-passed", "yes")
    expect(page.get_by_test_id("step-status")).to_contain_text("answer the questions")

    question = page.locator("#questions [data-testid=question]")
    question.get_by_test_id("numeric-input").fill("3")
    question.get_by_test_id("submit").click()
    expect(page.get_by_test_id("question-wrong")).to_be_visible()
    page.locator("#questions [data-testid=question]").get_by_test_id("numeric-input").fill("4")
    page.locator("#questions [data-testid=question]").get_by_test_id("submit").click()
    expect(page.get_by_test_id("step-status")).to_contain_text("Step passed")
    page.get_by_test_id("next-step").click()
    page.wait_for_url(re.compile(r"/steps/all-reduce$"))
    # The step continues from the learner's own code.
    expect(page.locator(".cm-content")).to_contain_text("hello from rank {rank} of {world}")


def test_stop_ends_a_spinning_run(page: Page):
    start_lab(page)
    replace_code(page, "print('started', flush=True)\nwhile True:\n    pass\n")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("rank-0").locator("pre.out")).to_contain_text("started")
    page.get_by_test_id("stop").click()
    judged(page)
    expect(page.get_by_test_id("run-summary")).to_contain_text("stopped")


def test_practical_6_step_1_from_starter_to_the_next_step(page: Page):
    """The shipped Practical 6: run the starter as it is (both ranks print the same line, the
    checks fail), write the print, pass, answer the question, go on to splitting the batch."""
    from app.challenges.loader import load_path
    from app.config import ROOT

    (lab,) = [
        loaded for loaded in load_path(ROOT / "challenges").labs if loaded.lab.id == "practical-6"
    ]
    step = lab.lab.steps[0]
    question = step.questions[0]
    page.goto("/labs/practical-6")
    page.get_by_test_id("start-guest").click()
    page.get_by_test_id("lab-continue").click()
    page.wait_for_url(re.compile(r"/labs/practical-6/steps/ranks$"))
    expect(page.locator(".cm-content")).to_contain_text("practical6_ddp.py is running")
    page.get_by_test_id("nproc").select_option("2")
    page.get_by_test_id("run").click()
    for rank in (0, 1):
        expect(page.get_by_test_id(f"rank-{rank}").locator("pre.out")).to_contain_text(
            "practical6_ddp.py is running"
        )
    judged(page)
    expect(page.get_by_test_id("check").first).to_have_attribute("data-passed", "no")
    replace_code(page, lab.solutions[step.id])
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("rank-1").locator("pre.out")).to_contain_text("Rank: 1")
    judged(page)
    for index in range(len(step.checks)):
        expect(page.get_by_test_id("check").nth(index)).to_have_attribute("data-passed", "yes")
    page.reload()  # the draft is kept
    expect(page.locator(".cm-content")).to_contain_text("World size")
    form = page.locator("#questions [data-testid=question]")
    assert isinstance(question, ChoiceBase)
    check(form, question, *sorted(question.answer_ids))
    form.get_by_test_id("submit").click()
    expect(page.get_by_test_id("step-status")).to_contain_text("Step passed")
    page.get_by_test_id("next-step").click()
    page.wait_for_url(re.compile(r"/labs/practical-6/steps/split-batch$"))

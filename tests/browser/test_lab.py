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
    """Wait until the run has ended and its judged checks are on the page."""
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
    judged(page)  # the judged checks are swapped in
    checks = page.get_by_test_id("check")
    expect(checks.first).to_have_attribute("data-passed", "no")
    # The run kept the code as the draft: a reload shows it.
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


def in_editor(page: Page) -> bool:
    """Whether the keyboard focus is in the code editor."""
    return page.evaluate("() => document.activeElement?.closest('.cm-editor') !== null")


def test_a_run_updates_the_page_in_place_and_focus_stays_in_the_editor(page: Page):
    start_lab(page)
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    page.evaluate("() => { window.sameDocument = true; }")  # gone if the page reloads
    replace_code(page, WRONG)
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("rank-1").locator("pre.out")).to_contain_text("hello")
    judged(page)
    expect(page.get_by_test_id("check").first).to_have_attribute("data-passed", "no")
    # The failed check says what was expected and what was printed, in words.
    expect(page.get_by_test_id("check-problem").first).to_have_text(
        "rank 0 should print a line like hello from rank <n> of <n> (<n> stands for a number);"
        " it printed hello."
    )
    expect(page.get_by_test_id("check-problem").first.locator("code").first).to_have_text(
        "hello from rank <n> of <n>"
    )
    assert "\\d" not in page.get_by_test_id("checks").inner_text()
    assert in_editor(page)
    # That was the starter as it is: no hint yet (it is no failed try).
    expect(page.get_by_test_id("lab-hint")).to_have_count(0)
    # A click on Run leaves the focus in the editor as well (Run is disabled while it runs).
    page.keyboard.insert_text("# my try\n")
    page.get_by_test_id("run").click()
    assert in_editor(page)
    expect(page.get_by_test_id("rank-1").locator("pre.out")).to_contain_text("hello")
    judged(page)
    assert in_editor(page)
    # The learner's own failed try brings hint 1, swapped in without a reload.
    expect(page.get_by_test_id("lab-hint")).to_have_count(1)
    assert page.evaluate("() => window.sameDocument") is True
    assert navigations == [], "the page navigated during a run"


def test_show_solution_appears_in_place_with_the_focus_on_it(page: Page):
    """The step has two hints: after three failed runs of the learner's own code (each judged
    in place) "Show solution" is offered; it swaps the solution in without a reload and moves
    the focus to it, the learner's code and the panes untouched."""
    start_lab(page)
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    page.evaluate("() => { window.sameDocument = true; }")  # gone if the page reloads
    for attempt in range(3):
        replace_code(page, WRONG + f"# try {attempt}\n")
        page.keyboard.press("Control+Enter")
        expect(page.get_by_test_id("rank-1").locator("pre.out")).to_contain_text("hello")
        judged(page)
    expect(page.get_by_test_id("lab-hint")).to_have_count(2)
    show = page.get_by_test_id("show-solution")
    show.click()
    solution = page.get_by_test_id("solution")
    expect(solution).to_contain_text('os.environ["WORLD_SIZE"]')
    expect(solution).to_be_focused()
    expect(show).to_have_count(0)  # offered once; the solution stays below the hints
    expect(page.get_by_test_id("lab-hint")).to_have_count(2)
    expect(page.locator(".cm-content")).to_contain_text("# try 2")
    expect(page.get_by_test_id("rank-1").locator("pre.out")).to_contain_text("hello")
    assert page.evaluate("() => window.sameDocument") is True
    assert navigations == [], "the page navigated to show the solution"


def test_stop_ends_a_spinning_run_and_keeps_what_it_printed(page: Page):
    start_lab(page)
    replace_code(page, "print('started', flush=True)\nwhile True:\n    pass\n")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("rank-0").locator("pre.out")).to_contain_text("started")
    page.get_by_test_id("stop").click()
    judged(page)
    expect(page.get_by_test_id("run-summary")).to_have_text("Last run: stopped by you.")
    expect(page.get_by_test_id("run-state")).to_contain_text("Stopped by you")
    for rank in (0, 1):  # what the ranks printed stays on the page
        pane = page.get_by_test_id(f"rank-{rank}")
        expect(pane.locator("pre.out")).to_have_text("started\n")
        expect(pane.get_by_test_id("rank-status")).to_have_text("stopped by you")
    page.reload()  # and is kept with the run
    expect(page.get_by_test_id("rank-0").locator("pre.out")).to_have_text("started\n")
    expect(page.get_by_test_id("run-summary")).to_contain_text("Last run: stopped by you")


# Far under the 118,185 px that 10,000 printed lines made of the page before panes scrolled.
PAGE_HEIGHT_LIMIT = 4000


def test_a_run_printing_10000_lines_stays_in_a_bounded_pane_and_says_where_it_was_cut(
    page: Page,
):
    start_lab(page)
    replace_code(page, 'for i in range(10000):\n    print(f"line {i:05d} of the flood")\n')
    page.get_by_test_id("nproc").select_option("1")
    page.get_by_test_id("run").click()
    judged(page)
    pane = page.get_by_test_id("rank-0")
    expect(pane.get_by_test_id("cut-0")).to_be_visible()
    expect(pane.get_by_test_id("cut-0")).to_contain_text("Output cut after 64 KiB")
    expect(page.get_by_test_id("run-summary")).to_contain_text("output cut after 64 KiB")
    expect(page.get_by_test_id("run-summary")).not_to_contain_text("output_limit")
    out = pane.locator("pre.out")
    expect(out).to_contain_text("line 00000 of the flood")
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < PAGE_HEIGHT_LIMIT, f"the page is {height} px tall"
    # The pane scrolls instead: it holds far more than it shows.
    assert out.evaluate("(pre) => pre.scrollHeight > 4 * pre.clientHeight")
    page.reload()  # the stored run is bounded and says so too
    expect(page.get_by_test_id("cut-0")).to_contain_text("Output cut after 64 KiB")
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < PAGE_HEIGHT_LIMIT, f"after a reload the page is {height} px tall"


def test_reset_asks_first_and_cancel_keeps_the_code(page: Page):
    start_lab(page)
    with page.expect_response(lambda response: response.url.endswith("/draft")):
        replace_code(page, WRONG + "# keep me\n")
    dialog = page.get_by_role("dialog", name="Reset this step?")
    expect(dialog).to_be_hidden()
    page.get_by_test_id("reset").click()
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("reset-cancel")).to_be_focused()  # the safe choice first
    page.get_by_test_id("reset-cancel").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("reset")).to_be_focused()
    expect(page.locator(".cm-content")).to_contain_text("# keep me")
    page.get_by_test_id("reset").click()
    page.keyboard.press("Escape")  # Escape cancels as well
    expect(dialog).to_be_hidden()
    page.reload()
    expect(page.locator(".cm-content")).to_contain_text("# keep me")  # nothing was lost
    page.get_by_test_id("reset").click()
    page.get_by_test_id("reset-confirm").click()
    page.wait_for_load_state()
    expect(page.locator(".cm-content")).not_to_contain_text("# keep me")
    expect(page.locator(".cm-content")).to_contain_text('print("hello")')


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

"""A lab's checks are true at every rank count its picker offers: the shipped all-reduce step,
solved correctly, passes every check on 3 ranks and on the 4 its question asks about (once a
check for 3 ranks said a correct run on 4 failed). Its numeric key reads as the program
prints it ("6", not "6.0"); before any run the checks read as text with code and the ranks'
section says no run yet. The step passes axe at 1280 and 390 px."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from app.challenges.loader import load_path
from app.config import ROOT
from tests.browser.test_axe import AXE, BLOCKING, describe
from tests.browser.test_lab import judged, replace_code

pytestmark = pytest.mark.browser
LAB = "collectives-by-hand"


def outside_the_editor(page: Page, name: str) -> list[str]:
    """Serious or critical axe violations of the page shown, the code editor left out: the
    vendored CodeMirror colours an f-string #e40 on white (3.4:1) and its scroller takes no
    focus at 390 px, whatever this page does (tests/browser/test_axe covers the editor with
    code that has no f-string)."""
    page.add_init_script(path=AXE)
    page.goto(urlsplit(page.url).path)
    report = page.evaluate(
        "() => axe.run({exclude: [['.cm-editor']]}, {resultTypes: ['violations']})"
    )
    found = [describe(v) for v in report["violations"] if v["impact"] in BLOCKING]
    return [f"{name} ({page.url}):", *found] if found else []


def test_the_correct_all_reduce_passes_at_every_rank_count_the_picker_offers(page: Page):
    (loaded,) = [lab for lab in load_path(ROOT / "challenges").labs if lab.lab.id == LAB]
    step = loaded.lab.steps[0]
    page.goto(f"/labs/{LAB}")
    page.get_by_test_id("start-guest").click()
    page.get_by_test_id("lab-continue").click()
    page.wait_for_url(re.compile(rf"/labs/{LAB}/steps/{step.id}$"))
    # Before any run: backticks read as code, and the ranks' section is not an empty heading.
    pending = page.get_by_test_id("check")
    expect(pending.first.locator("code")).to_have_text("sum of ranks = 3")
    expect(pending.first).not_to_contain_text("`")
    expect(page.get_by_test_id("run-summary")).to_contain_text("No run yet")

    offered = [int(n) for n in page.get_by_test_id("nproc").locator("option").all_inner_texts()]
    assert offered == [3, 4]  # the launch's 3, and the 4 the step's question asks about
    replace_code(page, loaded.solutions[step.id])
    for count in offered:
        page.get_by_test_id("nproc").select_option(str(count))
        page.get_by_test_id("run").click()
        total = count * (count - 1) // 2  # 0 + 1 + … + (count - 1)
        last = page.get_by_test_id(f"rank-{count - 1}").locator("pre.out")
        expect(last).to_have_text(f"rank {count - 1}: sum of ranks = {total}\n")
        judged(page)
        checks = page.get_by_test_id("check")
        expect(checks.first).to_be_visible()
        for index in range(checks.count()):
            expect(checks.nth(index)).to_have_attribute("data-passed", "yes")
        expect(page.get_by_test_id("checks")).not_to_contain_text("✗")
        expect(page.get_by_test_id("step-status")).to_contain_text("answer the questions")
    found = outside_the_editor(page, "lab step, judged")
    page.set_viewport_size({"width": 390, "height": 844})
    found += outside_the_editor(page, "lab step at 390 px")
    page.set_viewport_size({"width": 1280, "height": 900})
    assert found == [], "\n".join(found)

    form = page.locator("#questions [data-testid=question]")
    form.get_by_test_id("numeric-input").fill("6")
    form.get_by_test_id("submit").click()
    expect(page.get_by_test_id("step-status")).to_contain_text("Step passed")
    key = page.locator("#questions [data-testid=numeric-key]")
    expect(key).to_have_text("Answer: 6")  # as rank 3 prints it, not 6.0

"""In a real browser, a learner part-way through a lab sees that a newer version is live and
what changed, moves to it, and both pages pass axe at a desktop's and a phone's width. A
server of its own with the publish gate as production has it (tests/browser/test_draft_previews)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app import migrations
from app.main import create_app
from tests.browser.conftest import watch_csp
from tests.browser.test_staff_verify import blocking, sign_in_as_instructor
from tests.conftest import FIXTURES, make_settings
from tests.publishing.test_gate import prove
from tests.support.fake_executor import FakeExecutor
from tests.support.live import serving

pytestmark = pytest.mark.browser
STEP2_TITLE = re.compile(r"^    title: .*$(?=\n    instructions: All-reduce)", re.MULTILINE)


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A proven lab served with the gate on: its URL, database URL and folder."""
    root = tmp_path_factory.mktemp("gated-lab")
    folder = root / "challenges"
    shutil.copytree(FIXTURES / "labs" / "hello", folder / "hello")
    prove(folder)
    url = f"sqlite:///{root / 'gated.db'}"
    migrations.upgrade(url)
    settings = make_settings(url, challenges_dir=folder, content_gate="proven")
    with serving(create_app(settings, executor=FakeExecutor())) as base_url:  # type: ignore[arg-type]
        yield base_url, url, folder


def retitle_step_two(folder: Path, title: str) -> None:
    """Change the lab's second step and prove the course: the next Reload publishes it."""
    path = folder / "hello" / "lab.yaml"
    text, count = STEP2_TITLE.subn(f"    title: {title}", path.read_text())
    assert count == 1
    path.write_text(text)
    prove(folder)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_learner_sees_a_newer_lab_version_moves_to_it_and_both_pages_pass_axe(
    browser, gated, csp_problems, width
):
    base_url, database_url, folder = gated
    context = browser.new_context(base_url=base_url, viewport={"width": width, "height": 900})
    context.set_default_timeout(30_000)
    watch_csp(context, csp_problems)
    page: Page = context.new_page()
    sign_in_as_instructor(page, database_url, f"lab-mover-{width}")
    page.goto("/labs/hello-ranks/steps/print-rank")  # the progress begins on the live version
    question = page.locator('form[action$="/world-size-question/answer"]')
    question.locator('input[name="choice"]').fill("4")
    question.get_by_test_id("submit").click()
    page.wait_for_url(re.compile(r"was=right"))
    retitle_step_two(folder, f"Sum the ranks at {width}")
    page.goto("/staff/content")
    page.get_by_test_id("reload").click()
    page.wait_for_url(re.compile(r"/staff/content$"))
    page.goto("/labs/hello-ranks")
    offer = page.get_by_test_id("lab-newer")
    expect(offer).to_contain_text("A newer version of this lab is live")
    expect(page.get_by_test_id("lab-newer-changed")).to_contain_text(f"Sum the ranks at {width}")
    before = blocking(page)
    page.get_by_test_id("lab-move").click()
    expect(page.get_by_test_id("lab-moved")).to_be_visible()
    expect(page.get_by_test_id("lab-newer")).to_have_count(0)
    expect(page.get_by_test_id("lab-steps")).to_contain_text(f"Sum the ranks at {width}")
    after = blocking(page)
    context.close()
    assert before == [], "\n".join(before)
    assert after == [], "\n".join(after)
    assert csp_problems == []

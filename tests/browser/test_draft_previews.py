"""An instructor in a real browser previews a held topic draft and a held lab draft from the
content page; both pages pass axe at a desktop's and a phone's width. A server of its own,
with the publish gate as production has it (the shared live server publishes what validates,
so nothing there is ever held)."""

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
from tests.publishing.test_learner_versions import DRAFT_PROOF
from tests.support.fake_executor import FakeExecutor
from tests.support.live import serving

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A proven course served with the gate on: its URL, database URL and folder."""
    root = tmp_path_factory.mktemp("gated")
    folder = root / "challenges"
    shutil.copytree(FIXTURES / "modes", folder / "modes")
    shutil.copytree(FIXTURES / "labs" / "hello", folder / "hello")
    prove(folder)
    url = f"sqlite:///{root / 'gated.db'}"
    migrations.upgrade(url)
    settings = make_settings(url, challenges_dir=folder, content_gate="proven")
    with serving(create_app(settings, executor=FakeExecutor())) as base_url:  # type: ignore[arg-type]
        yield base_url, url, folder


@pytest.fixture(scope="module")
def drafts(gated) -> None:
    """Edit the topic and the lab without proving them: the next Reload holds both."""
    _base, _url, folder = gated
    topic = folder / "modes" / "topic.yaml"
    topic.write_text(topic.read_text().replace("Rank 0, so that", "DRAFT-BACK Rank 0, so that"))
    topic.write_text(topic.read_text() + DRAFT_PROOF)
    lab = folder / "hello" / "lab.yaml"
    lab.write_text(lab.read_text().replace("Every rank says hello", "DRAFT-STEP-TITLE"))


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(("kind", "unit_id", "shown"), [
    ("topic", "drill", "DRAFT-BACK"),
    ("lab", "hello-ranks", "DRAFT-STEP-TITLE"),
])  # fmt: skip
def test_a_held_draft_preview_shows_the_draft_and_passes_axe(
    browser, gated, drafts, csp_problems, width, kind, unit_id, shown
):
    base_url, database_url, _folder = gated
    context = browser.new_context(base_url=base_url, viewport={"width": width, "height": 900})
    context.set_default_timeout(30_000)
    watch_csp(context, csp_problems)
    page: Page = context.new_page()
    sign_in_as_instructor(page, database_url, f"drafts-{kind}-{width}")
    page.goto("/staff/content")
    page.get_by_test_id("reload").click()  # holds the edits (again: a held draft stays held)
    page.wait_for_url(re.compile(r"/staff/content$"))
    link = page.locator(f'a[data-testid="draft-preview-link"][href^="/staff/{kind}s/{unit_id}/"]')
    link.click()
    expect(page.get_by_test_id("draft-banner")).to_be_visible()
    expect(page.locator("main")).to_contain_text(shown)
    found = blocking(page)
    context.close()
    assert found == [], "\n".join(found)
    assert csp_problems == []

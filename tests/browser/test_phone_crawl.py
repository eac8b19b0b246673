"""Every lesson, practice question, cheat sheet and lab step fits a 390 px phone screen.

The measure is `document.documentElement.scrollWidth <= 390`: under mobile emulation the layout
viewport (`innerWidth`) grows with content wider than the screen, so comparing against it never
fails. One page visits every URL, which the catalogue lists (nothing hard-coded): a new topic,
item or step is crawled as soon as it ships.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page
from sqlmodel import Session, select

from app.accounts.models import User
from app.challenges.catalog import Catalog
from app.db import make_engine
from app.labs.models import LabStepState

pytestmark = pytest.mark.browser
WIDTH = 390

# What widens the page: hide one child at a time, and where the page then fits, go down into
# that child; the deepest such element is named ("tag.class: text"). Text that overflows its own
# box, or a pseudo-element, is found this way too, which no bounding box shows.
CULPRIT = """(width) => {
  let culprit = null;
  const fits = () => document.documentElement.scrollWidth <= width;
  const down = (el) => {
    for (const child of el.children) {
      const was = child.style.display;
      child.style.display = 'none';
      const found = fits();
      child.style.display = was;
      if (found) { culprit = child; down(child); return; }
    }
  };
  down(document.body);
  if (culprit === null) return 'several elements';
  const name = culprit.tagName.toLowerCase() + (typeof culprit.className === 'string' &&
    culprit.className ? '.' + culprit.className.trim().split(/ +/).join('.') : '');
  return `${name}: ${culprit.textContent.trim().slice(0, 60)}`;
}"""


def pass_every_lab_step(database_url: str, username: str, catalog: Catalog) -> None:
    """Open every step of every lab to this learner, as passing the ones before would (the
    crawl measures the pages, not the runs)."""
    engine = make_engine(database_url)
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        now = datetime.now(UTC)
        for topic in catalog.topics():
            for loaded in topic.labs:
                for step in loaded.lab.steps:
                    session.add(
                        LabStepState(
                            user_id=user.id,
                            lab_id=loaded.lab.id,
                            step_id=step.id,
                            passed_at=now,
                            updated_at=now,
                        )
                    )
        session.commit()
    engine.dispose()


def crawl_paths(catalog: Catalog) -> Iterator[str]:
    """Each topic's lesson, practice questions and cheat sheet, then each lab's steps."""
    for topic in catalog.topics():
        if topic.loaded_topic is not None and topic.loaded_topic.topic.lesson is not None:
            yield f"/topics/{topic.id}/lesson"
        for entry in topic.practice:
            yield f"/topics/{topic.id}/practice/{entry.deck}/{entry.item.id}"
        if topic.cheat_sheet:
            yield f"/topics/{topic.id}/cheatsheet"
        for loaded in topic.labs:
            for step in loaded.lab.steps:
                yield f"/labs/{loaded.lab.id}/steps/{step.id}"


@pytest.fixture
def phone(browser, live_server) -> Iterator[Page]:
    context = browser.new_context(
        base_url=live_server,
        viewport={"width": WIDTH, "height": 844},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=3,
    )
    context.set_default_timeout(20_000)
    yield context.new_page()
    context.close()


def test_every_lesson_practice_question_cheat_sheet_and_lab_step_fits_390_px(
    phone: Page, live_folder: Path, live_database_url: str
) -> None:
    catalog = Catalog.load(live_folder / "challenges")
    phone.goto("/register")
    phone.get_by_label("Username").fill("phone-crawler")
    phone.get_by_label("Password").fill("crawls-every-page")
    phone.get_by_test_id("register").click()
    phone.wait_for_url(re.compile(r"/me/progress$"))
    pass_every_lab_step(live_database_url, "phone-crawler", catalog)
    paths = list(crawl_paths(catalog))
    kinds = {re.sub(r"^/(topics|labs)/[^/]+/(\w+).*$", r"\2", path) for path in paths}
    assert {"lesson", "practice", "cheatsheet", "steps"} <= kinds, kinds
    too_wide: dict[str, str] = {}
    not_shown: dict[str, int] = {}
    for path in paths:
        response = phone.goto(path)
        assert response is not None
        if response.status != 200:
            not_shown[path] = response.status
            continue
        width = int(phone.evaluate("document.documentElement.scrollWidth"))
        if width > WIDTH:
            too_wide[path] = f"{width} px: {phone.evaluate(CULPRIT, WIDTH)}"
    assert not_shown == {}, f"{len(not_shown)} of {len(paths)} pages not shown: {not_shown}"
    wide = "\n".join(f"{path}: {why}" for path, why in too_wide.items())
    assert not too_wide, f"{len(too_wide)} of {len(paths)} pages wider than {WIDTH} px:\n{wide}"

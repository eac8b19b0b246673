"""Icons are inline SVG from Lucide: no page needs an emoji font, and a badge names a known icon."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.challenges import icons
from app.challenges.base import Badge
from app.config import ROOT
from app.icons import LUCIDE, icon
from tests.support.learner import Learner

# Pictographs that render as empty boxes without an emoji font (✓ ✗ ▶ ■ are in ordinary fonts).
EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u26ff\u2b50\u23f1\u23f3\u270d\u2702]")


def test_every_named_icon_is_vendored_and_drawn_inline():
    assert {path.stem for path in LUCIDE.glob("*.svg")} == icons.NAMES
    for name in icons.NAMES:
        drawn = str(icon(name))
        assert drawn.startswith("<svg") and 'aria-hidden="true"' in drawn
        assert re.search(r"<(path|circle|rect|line|polyline|polygon|ellipse)\b", drawn), name
    assert all(icons.resolve(emoji) in icons.NAMES for emoji in icons.EMOJI)


def test_a_labelled_icon_is_announced_and_its_label_escaped():
    drawn = str(icon("award", 'badge "earned" <b>'))
    assert 'role="img"' in drawn and 'aria-label="badge &#34;earned&#34; &lt;b&gt;"' in drawn


def test_a_badge_takes_a_name_or_the_emoji_that_stands_for_one():
    assert Badge(name="x", icon="compass").icon == "compass"
    assert Badge(name="x", icon="🎖️").icon == "award"  # with its variation selector
    with pytest.raises(ValidationError, match=r'unknown icon .rockets.: did you mean "rocket"'):
        Badge(name="x", icon="rockets")


def test_learner_pages_draw_icons_without_emoji(client: TestClient):
    learner = Learner(client)
    learner.start_as_guest()
    attempt = learner.start("test-basics")
    pages = ["/", "/sets/test-basics", f"{attempt}/q/1", "/me/progress"]
    topics = re.findall(r'href="(/topics/[^"/]+)"', client.get("/").text)
    pages += topics[:2]
    for path in pages:
        text = client.get(path).text
        assert EMOJI.findall(text) == [], path
    assert '<svg class="icon' in client.get("/sets/test-basics").text


def test_templates_and_modes_use_no_emoji():
    sources = [*ROOT.joinpath("templates").rglob("*.html"), ROOT / "app/modes/__init__.py"]
    found = {str(p.relative_to(ROOT)): EMOJI.findall(p.read_text()) for p in sources}
    assert {path: chars for path, chars in found.items() if chars} == {}

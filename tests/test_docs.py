"""The README is a front door: small, and every link and image in it leads somewhere.

(docs/ itself is checked by `make docs`: mkdocs --strict fails on a broken link or anchor there.)
"""

from __future__ import annotations

import re

from app.config import ROOT

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_stays_a_front_door():
    assert len((ROOT / "README.md").read_bytes()) < 12 * 1024


def test_every_relative_link_in_the_readme_exists():
    readme = (ROOT / "README.md").read_text()
    targets = [t for t in LINK.findall(readme) if not re.match(r"[a-z]+:", t)]
    assert targets  # the docs pages and screenshots
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert missing == []

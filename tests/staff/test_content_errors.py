"""The content page shows validate's errors as validate says them: plain words at the value,
a snippet's syntax error in its .py file."""

from __future__ import annotations

import html
import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.accounts import sign_up
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner


def test_the_content_page_shows_the_plain_errors_at_their_places(
    app_factory, sqlite_url, tmp_path: Path
) -> None:
    folder = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, folder)
    for case in ("snippet-syntax", "unknown-field"):
        shutil.copytree(FIXTURES / "broken" / case, folder / case)
    (folder / "unknown-field" / "set.yaml").write_text(
        (folder / "unknown-field" / "set.yaml")
        .read_text()
        .replace("id: broken-example", "id: broken-field")
    )
    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=folder)
    with TestClient(app) as client:
        instructor = Learner(client)
        sign_up(instructor, "teacher", sqlite_url, Role.INSTRUCTOR)
        page = html.unescape(instructor.get("/staff/content").text)
    assert (
        "challenges/snippet-syntax/all_reduce.py:7:6: Python cannot compile this snippet: "
        "'(' was never closed (the code_file of set.yaml:14)"
    ) in page
    assert (
        "challenges/unknown-field/set.yaml:16:5: unknown field 'explenation': "
        "did you mean 'explanation'?"
    ) in page

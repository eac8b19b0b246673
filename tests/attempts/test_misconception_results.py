"""A learner's results page names the misconceptions their first picks showed and links each to
the lesson section that corrects it; a later try's pick names nothing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from fastapi.testclient import TestClient

from tests.analytics.test_class import take
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.content import with_misconceptions
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner


def test_the_results_page_links_a_first_picks_misconception_to_its_lesson_section(
    app_factory, sqlite_url, tmp_path: Path, clock
):
    folder = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, folder)
    with_misconceptions(folder, FIXTURES)
    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=folder)
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        # GPUs first (a misconception), then the key; the speed-up right at once.
        page = learner.get(f"{take(learner, clock, ['A', 'B'], ['3.33'])}/results").text
        client.cookies.clear()
        other = Learner(client)
        other.start_as_guest()
        # Right first, so its later picks (none here) could not count either.
        clean = other.get(f"{take(other, clock, ['B'], ['3.33'])}/results").text
        lesson = learner.get("/topics/lesson-drill/lesson")

    section = re.search(r'<section data-testid="misconceptions".*?</section>', page, re.S)
    assert section is not None, page
    text = " ".join(re.sub(r"<[^>]+>", "", section[0]).split())
    assert "What your first picks suggest" in text
    assert "Wrong belief: “The world size is the number of GPUs on the machine.”" in text
    assert "this process's own rank" not in text  # C was never picked
    assert "World size" in text  # the question that showed it, linked
    assert '<a href="/attempts/' in section[0] and '/q/1">World size</a>' in section[0]
    link = re.search(r'<a href="([^"]+)" data-testid="correction">([^<]+)</a>', section[0])
    assert link is not None
    assert link[1] == "/topics/lesson-drill/lesson#section-typed"
    assert link[2] == "Lesson (Lesson drill): Say what rank 1 prints"
    # The anchor exists on the lesson page the link opens.
    assert lesson.status_code == 200 and 'id="section-typed"' in lesson.text
    assert 'data-testid="misconceptions"' not in clean

"""Staff preview and Verify of topics and labs, and Verify's skip of what is proven."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from app.challenges.loader import load_path
from app.verification import evidence, proofs
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.accounts import sign_up
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

HX = {"HX-Request": "true"}
LAB = "/staff/labs/hello-ranks"
TOPIC = "/staff/topics/tiny-topic"
TOPIC_YAML = """\
id: tiny-topic
title: Tiny topic
summary: SUMMARY-OF-THE-TOPIC, about printing from ranks.
cards:
  - id: prints-hi
    front: What does one rank print?
    back: BACK-OF-THE-CARD `hi`
    proof:
      code: print("hi")
      launch: {nproc: 1, backend: gloo, timeout_s: 20}
      outcome: {ranks: {"0": {stdout: "hi\\n"}}}
  - id: claims-bye
    front: Does it print bye?
    back: It prints bye (a false claim, for the test).
    proof: says-bye
items:
  - id: explain-printing
    kind: explain
    difficulty: beginner
    title: Why print per rank
    prompt: Explain why each rank prints its own line.
    concepts:
      - {name: separate processes, phrasings: [each rank is a separate process]}
    model_answer: MODEL-ANSWER each rank is a separate process.
    explanation: Each rank is a separate process.
proofs:
  - id: says-bye
    code: print("hi")
    launch: {nproc: 1, backend: gloo, timeout_s: 20}
    outcome: {ranks: {"0": {stdout: "bye\\n"}}}
cheat_sheet: |
  # CHEAT-SHEET-HEADING
  Every rank prints.
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The test sets, the hello lab, and a tiny topic with one true and one false proof."""
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    shutil.copytree(FIXTURES / "labs" / "hello", target / "hello-lab")
    (target / "tiny").mkdir()
    (target / "tiny" / "topic.yaml").write_text(TOPIC_YAML)
    report = load_path(target)
    assert report.errors == [], report.errors
    return target


@contextmanager
def instructor_on(app, database_url: str) -> Iterator[Learner]:
    """An instructor signed in to the app, in a browser-like client."""
    with TestClient(app) as client:
        person = Learner(client)
        sign_up(person, "teacher", database_url, Role.INSTRUCTOR)
        yield person


def test_the_content_page_lists_topics_and_labs_with_preview_and_verify(
    app_factory, sqlite_url, folder
):
    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=folder)
    with instructor_on(app, sqlite_url) as instructor:
        page = instructor.get("/staff/content").text
    assert f'href="{TOPIC}/preview"' in page and f'hx-post="{TOPIC}/verify"' in page
    assert f'href="{LAB}/preview"' in page and f'hx-post="{LAB}/verify"' in page
    # A topic with nothing to run (the test sets' own "Collectives") offers no Verify.
    assert 'href="/staff/topics/collectives/preview"' in page
    assert 'hx-post="/staff/topics/collectives/verify"' not in page


def test_previews_show_topics_and_labs_and_outcomes_in_plain_words(app_factory, sqlite_url, folder):
    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=folder)
    with instructor_on(app, sqlite_url) as instructor:
        topic = instructor.get(f"{TOPIC}/preview").text
        lab = instructor.get(f"{LAB}/preview").text
        runs = instructor.get("/staff/sets/test-runs/preview").text
    for text in ("SUMMARY-OF-THE-TOPIC", "BACK-OF-THE-CARD", "MODEL-ANSWER", "CHEAT-SHEET-HEADING"):
        assert text in topic, text
    assert "rank 0 prints bye" in topic and "named proof <code>says-bye</code>" in topic
    assert "rank 0 prints hi" in topic
    assert 'data-testid="verify-topic-button"' in topic
    assert lab.count('data-testid="preview-step"') == 2
    assert "Every rank prints its rank and the world size" in lab
    assert "every rank prints output matching /hello from rank \\d+ of \\d+/" in lab
    assert "rank 0 prints something different from every other rank" in lab
    assert lab.count('data-testid="step-starter"') == lab.count('data-testid="step-solution"') == 2
    assert "WORLD_SIZE" in lab  # the solution
    assert "Continues with the learner's code from the previous step" in lab
    assert "every rank prints 1.0" in runs and "rank 0 prints 0.0" in runs
    for page in (topic, lab, runs):
        assert "RankOutcome" not in page and "{&#39;ranks&#39;" not in page


def test_verify_refuses_learners_and_requests_without_the_csrf_token(
    app_factory, sqlite_url, folder
):
    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=folder)
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        for url in (f"{TOPIC}/preview", f"{LAB}/preview", f"{TOPIC}/verify", f"{LAB}/verify"):
            assert client.get(url).status_code == 403, url
        for url in (f"{TOPIC}/verify", f"{LAB}/verify"):
            assert learner.post(url).status_code == 403, url
    with instructor_on(app, sqlite_url) as instructor:
        for url in (f"{TOPIC}/verify", f"{LAB}/verify"):
            assert instructor.client.post(url, headers=HX).status_code == 403, url  # no token
        assert instructor.post("/staff/topics/collectives/verify", headers=HX).status_code == 404
        assert instructor.get("/staff/labs/no-such-lab/preview").status_code == 404


def test_an_item_proven_and_unchanged_is_skipped_as_the_cli_skips_it_unless_all_is_asked(
    app_factory, sqlite_url, folder
):
    loaded = next(s for s in load_path(folder).sets if s.challenge_set.id == "test-runs")
    item = loaded.challenge_set.items[0]
    digest = evidence.item_hash(loaded, item)
    proven = {proofs.item_key("test-runs", item.id): proofs.Proof("pass", digest)}
    proofs.save(folder / proofs.FILE_NAME, proven, "2.13.0+cpu", "gloo")  # the fake's torch
    executor = FakeExecutor()
    app = app_factory(sqlite_url, executor=executor, challenges_dir=folder)
    url = "/staff/sets/test-runs/items/all-reduce/verify"
    with instructor_on(app, sqlite_url) as instructor:
        instructor.post(url, headers=HX)
        assert app.state.verify_jobs.get(("test-runs", "all-reduce")).wait(10)
        skipped = instructor.get(url, headers=HX).text
        assert 'data-item-id="all-reduce" data-state="skipped"' in skipped
        assert "1 proven and unchanged, skipped." in skipped and executor.requests == []
        assert 'data-testid="verify-all"' in skipped
        instructor.post(url, {"all": "true"}, headers=HX)
        assert app.state.verify_jobs.get(("test-runs", "all-reduce")).wait(10)
        forced = instructor.get(url, headers=HX).text
    assert 'data-verdict="pass" data-runs="3"' in forced and len(executor.requests) == 3


@pytest.mark.executor
def test_verify_of_a_lab_and_a_topic_gives_the_cli_verdicts(
    app_factory, sqlite_url, folder, executor_url
):
    app = app_factory(sqlite_url, executor_url=executor_url, challenges_dir=folder)
    with instructor_on(app, sqlite_url) as instructor:
        instructor.post(f"{LAB}/verify", headers=HX)
        instructor.post(f"{TOPIC}/verify", headers=HX)
        assert app.state.verify_jobs.get(("lab:hello-ranks", None)).wait(300)
        assert app.state.verify_jobs.get(("topic:tiny-topic", None)).wait(300)
        lab = instructor.get(f"{LAB}/verify", headers=HX).text
        topic = instructor.get(f"{TOPIC}/verify", headers=HX).text
    verdicts = re.compile(r'data-item-id="([\w -]+)" data-verdict="(\w+)"')
    assert dict(verdicts.findall(lab)) == {"print-rank": "pass", "all-reduce": "pass"}
    assert "PASS challenges/hello-lab/lab.yaml hello-ranks step print-rank" in lab
    assert dict(verdicts.findall(topic)) == {"proof says-bye": "fail", "prints-hi proof": "pass"}
    assert "FAIL challenges/tiny/topic.yaml proof says-bye" in topic
    assert 'data-passed="false"' in topic

"""Staff verification on the job bus, across app processes: a job started on one app is
followed to its verdicts on another, a second start anywhere joins it, and a job whose app died
shows as interrupted. Two apps share one Redis and one SQLite file; an agent (real, with a
scripted runner: no torch) serves the queue."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from app.accounts.models import Role
from app.bus_client import RedisExecutorClient
from app.challenges.loader import LoadedSet, load_path
from app.db import make_engine
from app.verification import pipeline
from app.verification.incremental import Selection
from app.verification.jobs import JobProgress, verify_in_background
from app.verification.jobs_redis import RedisJobRegistry, alive_key
from app.verification.rules import ItemReport, Verdict
from executor import bus
from tests.bus.conftest import Owner, serve_process
from tests.bus.scripted_agent import ScriptedRunner
from tests.conftest import TEST_CHALLENGES
from tests.support.accounts import set_role
from tests.support.fake_executor import GatedExecutor
from tests.support.learner import CSRF_META
from tests.support.live import serving
from tests.support.waiting import wait_for

SET_URL = "/staff/sets/bus-verify/verify"
HX = {"HX-Request": "true"}
REPEATS = pipeline.REPEATS  # each item runs as often as `ranklab verify` runs it
VERDICT = re.compile(r'data-item-id="([\w-]+)" data-verdict="(\w+)"')
# Two items whose snippets are scripts for the scripted runner: the first holds until the test
# releases it and proves its key; the second's key is wrong.
SET_YAML = """\
id: bus-verify
title: Verified on the bus
topic: Collectives
own_topic: true
description: Two items the scripted agent plays.
badge: {name: Verifier}
items:
  - id: first
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: Held, then proven
    prompt: What does every rank print?
    code_file: first.py
    launch: {nproc: 2, backend: gloo, timeout_s: 10}
    explanation: Every rank prints 1.0.
    options:
      - {id: A, text: "`1.0` on every rank", outcome: {ranks: {all: {stdout: "1.0\\n"}}}}
      - {id: B, text: "`0.0` on every rank", outcome: {ranks: {all: {stdout: "0.0\\n"}}}}
    answer: A
  - id: second
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: Wrongly keyed
    prompt: What does every rank print?
    code_file: second.py
    launch: {nproc: 2, backend: gloo, timeout_s: 10}
    explanation: Every rank prints 0.0.
    options:
      - {id: A, text: "`1.0` on every rank", outcome: {ranks: {all: {stdout: "1.0\\n"}}}}
      - {id: B, text: "`0.0` on every rank", outcome: {ranks: {all: {stdout: "0.0\\n"}}}}
    answer: A
"""


@pytest.fixture
def content(tmp_path: Path) -> Path:
    folder = tmp_path / "challenges" / "bus-verify"
    folder.mkdir(parents=True)
    (folder / "set.yaml").write_text(SET_YAML)
    (folder / "first.py").write_text("# wait\n# say 1.0\n")  # the scripted agent's script
    (folder / "second.py").write_text("# say 0.0\n")
    return folder.parent


@pytest.fixture
def apps(
    app_factory: Any, sqlite_url: str, queue_url: str, content: Path, runner: ScriptedRunner
) -> Iterator[tuple[str, str]]:
    """Two apps (as two workers would be), each on its own port: their base URLs."""
    built = [
        app_factory(sqlite_url, executor=RedisExecutorClient(queue_url), challenges_dir=content)
        for _ in range(2)
    ]
    with serving(built[0]) as a, serving(built[1]) as b:
        yield a, b


@pytest.fixture
def owner(sqlite_url: str, queue_url: str, content: Path, tmp_path: Path) -> Iterator[Owner]:
    """An app in a process of its own, serving until the test kills it."""
    with serve_process(sqlite_url, queue_url, content, tmp_path / "owner.log") as served:
        yield served


class Instructor:
    """An instructor's browser: its cookies go to every app (they share the host, 127.0.0.1)."""

    def __init__(self, sqlite_url: str) -> None:
        self.http = httpx.Client(timeout=30)
        self.sqlite_url = sqlite_url

    def sign_up(self, app: str) -> None:
        response = self.http.post(
            f"{app}/register",
            data={"username": "teacher", "password": "password-123", "csrf_token": self._csrf(app)},
            follow_redirects=True,
        )
        assert response.status_code == 200, response.text
        set_role(self.sqlite_url, "teacher", Role.INSTRUCTOR)

    def _csrf(self, app: str) -> str:
        match = CSRF_META.search(self.http.get(f"{app}/").text)
        assert match is not None
        return match[1]

    def verify(self, app: str) -> str:
        """Press Verify on the set's preview page; the fragment it answers with."""
        data = {"csrf_token": self._csrf(app)}
        response = self.http.post(f"{app}{SET_URL}", data=data, headers=HX)
        assert response.status_code == 200, response.text
        return response.text

    def progress(self, app: str) -> str:
        """Poll the set's verification, as its fragment does every second."""
        response = self.http.get(f"{app}{SET_URL}", headers=HX)
        assert response.status_code == 200, response.text
        return response.text

    def progress_until(self, app: str, check: Callable[[str], bool], what: str) -> str:
        """Poll until the fragment passes `check`; return it."""

        def passes() -> str:
            page = self.progress(app)
            return page if check(page) else ""

        return wait_for(passes, 30, what)

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def instructor(sqlite_url: str) -> Iterator[Instructor]:
    person = Instructor(sqlite_url)
    yield person
    person.close()


def _job_state(fragment: str) -> str:
    match = re.search(r'data-job-state="(\w+)"', fragment)
    assert match is not None, fragment
    return match[1]


def _item_state(fragment: str, item_id: str) -> str | None:
    match = re.search(rf'data-item-id="{item_id}" data-state="(\w+)"', fragment)
    return match[1] if match else None


def _runs_queued(queue_url: str) -> int:
    client = redis.Redis.from_url(queue_url)
    try:
        return int(client.xlen(bus.runs_key("cpu")))
    finally:
        client.close()


def test_a_verification_started_on_one_app_is_followed_on_another_to_the_same_verdicts(
    apps: tuple[str, str], instructor: Instructor, runner: ScriptedRunner, queue_url: str
) -> None:
    a, b = apps
    instructor.sign_up(a)
    assert _job_state(instructor.verify(a)) == "running"
    # The poll lands on the other app: it shows the job, its first item running.
    running = instructor.progress_until(
        b, lambda page: _item_state(page, "first") == "running", "the first item to run"
    )
    assert _job_state(running) == "running" and 'hx-trigger="every 1s"' in running
    assert _item_state(running, "second") == "pending"
    wait_for(lambda: _runs_queued(queue_url) == 1, 10, "the first run to be queued")
    # Verify pressed again on the other app joins the job: no second job, no second run.
    joined = instructor.verify(b)
    assert _job_state(joined) == "running" and "Verifying… 0 of 2 items done." in joined
    assert _item_state(joined, "first") == "running"
    runner.release()
    done = instructor.progress_until(b, lambda page: _job_state(page) == "done", "the end")
    assert "hx-trigger" not in done
    assert VERDICT.findall(done) == [("first", "pass"), ("second", "fail")]
    assert "Done: 1 of 2 keys not proven." in done
    assert VERDICT.findall(instructor.progress(a)) == VERDICT.findall(done)
    assert _runs_queued(queue_url) == 2 * REPEATS  # one job ran each item REPEATS times
    # Each verdict is recorded: the preview on either app shows the report's evidence.
    assert 'data-testid="observed-rank-1"' in done


def test_a_verification_whose_app_died_shows_as_interrupted_and_may_run_again(
    owner: Owner,
    apps: tuple[str, str],
    instructor: Instructor,
    runner: ScriptedRunner,
) -> None:
    _a, b = apps
    instructor.sign_up(owner.url)
    instructor.verify(owner.url)
    instructor.progress_until(
        b, lambda page: _item_state(page, "first") == "running", "the first item to run"
    )
    owner.kill()  # the app running the job dies, its first snippet held by the agent
    # Within the dead app's lease (10 s) and a poll, the job has ended.
    interrupted = instructor.progress_until(
        b, lambda page: _job_state(page) != "running", "the job to end"
    )
    assert _job_state(interrupted) == "interrupted" and "hx-trigger" not in interrupted
    assert (
        "Verification interrupted: the server running it stopped before it finished. "
        "The verdicts shown were recorded; press Verify to run it again."
    ) in interrupted
    assert interrupted.count("not run") == 2 and "aria-busy" not in interrupted
    # It no longer blocks the set: Verify starts a new job, which runs to its verdicts.
    assert _job_state(instructor.verify(b)) == "running"
    runner.release()
    done = instructor.progress_until(b, lambda page: _job_state(page) == "done", "the end")
    assert VERDICT.findall(done) == [("first", "pass"), ("second", "fail")]


def _report(item_id: str) -> ItemReport:
    return ItemReport(item_id, Verdict.PASS)


def test_a_job_declared_interrupted_takes_no_late_writes_from_its_process(
    queue_url: str,
) -> None:
    # A long lease: nothing renews it while the test plays the process that stalled.
    first, second = RedisJobRegistry(queue_url, lease_s=60), RedisJobRegistry(queue_url)
    key = ("a-set", None)
    gate, written = threading.Event(), threading.Event()

    def work(job: JobProgress) -> None:
        job.mark_running("x")
        assert gate.wait(10)
        job.mark_done(_report("x"))
        written.set()

    job, started = first.start(key, ["x", "y"], work)
    assert started and [entry.state for entry in job.progress()] == ["pending", "pending"]
    wait_for(lambda: second.get(key).progress()[0].state == "running", 10, "x to run")  # type: ignore[union-attr]
    joined, started_again = second.start(key, ["x", "y"], work)
    assert not started_again and joined.progress()[0].state == "running"
    # Its process stalls past its lease: a reader finds the lease gone and ends the job.
    client = redis.Redis.from_url(queue_url)
    client.delete(alive_key(key))
    client.close()
    seen = second.get(key)
    assert seen is not None and seen.done and seen.interrupted
    gate.set()
    assert written.wait(10)
    late = first.get(key)
    assert late is not None and late.interrupted
    assert [entry.state for entry in late.progress()] == ["running", "pending"]  # no verdict
    again, started_anew = second.start(key, ["x"], lambda job: job.mark_done(_report("x")))
    assert started_anew and not again.done
    wait_for(lambda: first.get(key).done, 10, "the new job to finish")  # type: ignore[union-attr]
    final = first.get(key)
    assert final is not None and not final.interrupted and final.error is None
    assert [entry.state for entry in final.progress()] == ["pass"]


def test_a_job_declared_interrupted_stops_before_its_next_item(
    queue_url: str, sqlite_url: str
) -> None:
    """A process that stalled past its lease must not go on running the rest of the set while
    a new job for the same key runs elsewhere: one job per key at a time, across processes."""
    loaded = load_path(TEST_CHALLENGES / "runs").sets[0]
    first = loaded.challenge_set.items[0]
    second = first.model_copy(update={"id": "all-reduce-again"})
    code = {**loaded.code, second.id: loaded.code[first.id]}
    two = LoadedSet(
        loaded.challenge_set.model_copy(update={"items": [first, second]}), loaded.path, code
    )
    executor = GatedExecutor()
    stalled, reader = RedisJobRegistry(queue_url, lease_s=60), RedisJobRegistry(queue_url)
    engine = make_engine(sqlite_url)
    selection = Selection(sets=[two])
    job = verify_in_background(stalled, executor, ("runs", None), selection, [], engine, 1)
    assert executor.entered.wait(10)  # the first item's snippet is running
    client = redis.Redis.from_url(queue_url)
    client.delete(alive_key(job.key))  # its lease runs out while it stalls
    client.close()
    seen = reader.get(job.key)
    assert seen is not None and seen.interrupted
    executor.gate.set()
    wait_for(lambda: not any(t.name.startswith("verify") for t in threading.enumerate()), 10,
             "the stalled job's threads to end")  # fmt: skip
    assert [request.code for request in executor.requests] == [code[first.id]]  # not the second
    engine.dispose()

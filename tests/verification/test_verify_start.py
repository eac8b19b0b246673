"""When `ranklab verify` starts its private executor: with --all, before it loads the course (the
executor's start, seconds of importing torch in other processes, overlaps the load); otherwise
only once the selection says something must run. The executor and the runs are faked: this is
about the order of the steps, the runs themselves are tested against a real executor elsewhere."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import embedded
from app.challenges import course
from app.verification import command, pipeline
from tests.conftest import TEST_CHALLENGES


@pytest.fixture
def started_with() -> list[dict[str, object]]:
    """The keyword arguments each private executor was started with."""
    return []


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch, started_with: list[dict[str, object]]) -> list[str]:
    seen: list[str] = []

    class Starting:
        def ready(self) -> str:
            seen.append("warm")
            return "http://127.0.0.1:9"  # nothing listens: the runs are faked below

    @contextlib.contextmanager
    def starting_executor(**options: object) -> Iterator[Starting]:
        seen.append("start")
        started_with.append(options)
        try:
            yield Starting()
        finally:
            seen.append("stop")

    @contextlib.contextmanager
    def temporary_executor(**options: object) -> Iterator[str]:
        seen.extend(["start", "warm"])
        started_with.append(options)
        try:
            yield "http://127.0.0.1:9"
        finally:
            seen.append("stop")

    real_load = course.load

    def load(path: Path) -> course.FolderReport:
        seen.append("load")
        return real_load(path)

    def run(*_: object) -> Iterator[pipeline.Outcome]:
        seen.append("runs")
        return iter(())

    monkeypatch.setattr(embedded, "starting_executor", starting_executor, raising=False)
    monkeypatch.setattr(embedded, "temporary_executor", temporary_executor)
    monkeypatch.setattr(course, "load", load)
    monkeypatch.setattr(pipeline, "run", run)
    return seen


def test_verify_all_starts_the_executor_before_it_loads_the_course(steps: list[str]) -> None:
    assert command.verify(TEST_CHALLENGES / "runs", run_all=True) == 0
    assert steps == ["start", "load", "warm", "runs", "stop"]


def test_verify_without_all_starts_an_executor_only_after_the_load(steps: list[str]) -> None:
    assert command.verify(TEST_CHALLENGES / "runs") == 0
    assert steps == ["load", "start", "warm", "runs", "stop"]


def test_an_unknown_item_stops_the_executor_started_early(steps: list[str]) -> None:
    assert command.verify(TEST_CHALLENGES / "runs", run_all=True, items=["no-such-item"]) == 2
    assert steps == ["start", "load", "stop"]


def test_verify_starts_its_executor_warm_for_torch_compile(
    steps: list[str], started_with: list[dict[str, object]]
) -> None:
    # Its compile runs cost half (executor/zygote.py's COMPILE_WARMUP_SNIPPET), early or late.
    assert command.verify(TEST_CHALLENGES / "runs", run_all=True) == 0
    assert command.verify(TEST_CHALLENGES / "runs") == 0
    assert [options.get("warm_compile") for options in started_with] == [True, True]


def test_verify_does_not_import_the_web_app_until_an_executor_starts():
    # A verify with nothing changed starts no executor: importing the web app that the embedded
    # executor serves beside (~1.7 s of a ~6 s answer) is only paid once something runs.
    probe = "import sys, app.verification.command; print('app.main' in sys.modules)"
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert shown.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("cores", "options", "jobs"),
    [(2, [], 3), (16, [], 8), (None, [], 2), (2, ["--executor", "http://127.0.0.1:9"], 1),
     (2, ["--jobs", "2"], 2)],
)  # fmt: skip
def test_verify_without_jobs_keeps_every_core_busy_with_its_own_executor_only(
    monkeypatch: pytest.MonkeyPatch, cores: int | None, options: list[str], jobs: int
) -> None:
    # A third job on 2 cores keeps both busy while a run's ranks wait on each other; a given
    # executor's slots are shared with others, so one at a time there unless asked.
    from app import cli

    asked: list[object] = []
    monkeypatch.setattr(command.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(command, "verify", lambda path, **kw: asked.append(kw["jobs"]) or 0)
    assert cli.main(["verify", str(TEST_CHALLENGES / "runs"), *options]) == 0
    assert asked == [jobs]

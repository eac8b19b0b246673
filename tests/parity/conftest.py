"""The reference launches (real torchrun, plain python), started once per session in the
background, a few at a time; each test waits only for the launches it compares against.

The executor fixture comes from tests/conftest.py (one warm pool shared with tests/executor).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.parity.cases import BY_NAME, CASES, USES, Case
from tests.parity.launch import Observed, run_python, run_torchrun

# torchrun cold-starts in 3-5 s on 2 cores, most of it importing torch in every process: three
# launches at a time keep both cores busy without starving the executor's runs.
CONCURRENT_LAUNCHES = 3
# Launches per reference run while a rank aborts at teardown (launch.TEARDOWN_ABORT). Measured:
# 4 of 30 DDP launches (no_sync_accumulation) at three at a time, more under CI's load; three
# in a row happened once in CI, so eight make a lost reference (~0.13**8) negligible.
ATTEMPTS = 8
DISCARDED: dict[str, int] = {}


class References:
    """Reference launches by case name, started in the background, cached for the session."""

    def __init__(self, pool: ThreadPoolExecutor, names: set[str]) -> None:
        self.started = time.monotonic()
        # Cases with a short deadline are the ones expected to hang until it: start them first
        # so that their waiting overlaps with the other launches (sorted() keeps CASES order,
        # the order the tests ask in, among the rest).
        chosen = [case for case in CASES if case.name in names]
        order = sorted(chosen, key=lambda case: case.deadline_s)
        self._futures: dict[str, list[Future[Observed]]] = {
            case.name: [pool.submit(launch, case) for _ in range(case.runs)] for case in order
        }

    def __getitem__(self, name: str) -> list[Observed]:
        return [future.result() for future in self._futures[name]]


def needed_cases(items: list[pytest.Item]) -> set[str]:
    """The cases the selected tests compare: their `case`/`name` parameters, and what a test
    declares with `cases.uses` (so that `-k one_case` launches only that one)."""
    names: set[str] = set()
    for item in items:
        callspec = getattr(item, "callspec", None)
        for value in callspec.params.values() if callspec else ():
            if isinstance(value, Case):
                names.add(value.name)
            elif isinstance(value, str) and value in BY_NAME:
                names.add(value)
        names.update(getattr(getattr(item, "function", None), USES, ()))
    return names


def launch(case: Case) -> Observed:
    """Run the case once under its reference launcher (again after a teardown abort)."""
    for attempt in range(ATTEMPTS):
        if case.launcher == "python":
            observed = run_python(case.source, case.deadline_s)
        else:
            observed = run_torchrun(case.source, case.nproc, case.deadline_s)
        observed.discarded = attempt
        if not observed.aborted_at_teardown:
            break
    DISCARDED[case.name] = DISCARDED.get(case.name, 0) + observed.discarded
    return observed


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say which reference launches had to be repeated (torch's teardown abort)."""
    repeated = {name: count for name, count in DISCARDED.items() if count}
    if repeated:
        terminalreporter.write_line(
            f"parity: reference launches repeated after a rank aborted at teardown: {repeated}"
        )


@pytest.fixture(scope="session")
def references(request: pytest.FixtureRequest) -> Iterator[References]:
    """The selected tests' reference launches, started now in the background."""
    pytest.importorskip("torch")
    pool = ThreadPoolExecutor(CONCURRENT_LAUNCHES, thread_name_prefix="torchrun")
    try:
        yield References(pool, needed_cases(request.session.items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

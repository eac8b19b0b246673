"""attack: one guest opens Run it again and again (20 streams of an 8 s hang), and floods the
output of a run: every stream took an executor slot and a worker thread, so another learner's
one-line lab run took 112.9 s instead of 0.2 s; a run printing a byte at a time became ~49k
events; and a browser reading slowly held the executor's stream, so the run ended late.
expect: a second run while one is going is refused (409, the message the page shows), runs
beyond the learner's rate are refused (429, with the wait); at most MAX_OUTPUT_EVENTS output
events reach the page (then `capped`, and the result); the run is read off the executor to its
end whatever the reader's pace."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import httpx

from app.executor_client import RunEvent
from app.runs.service import sse_events
from executor.bus import MAX_OUTPUT_EVENTS
from executor.contract import OutputEvent, RunRequest
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.runs.test_run_it import events, guest_on
from tests.support.fake_executor import FakeExecutor, canned_result

LAB_STEP = "/labs/hello-ranks/steps/print-rank"


@dataclass
class HeldExecutor(FakeExecutor):
    """Runs that print a line and then wait at a gate the test opens (on the event loop)."""

    entered: threading.Event = field(default_factory=threading.Event)
    gate: threading.Event = field(default_factory=threading.Event)

    async def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        self.requests.append(request)
        self.entered.set()
        yield OutputEvent(rank=0, stream="stdout", text="1.0\n")
        await anyio.to_thread.run_sync(self.gate.wait, 20)
        yield canned_result(*["1.0\n"] * request.nproc)


def test_a_second_run_while_one_is_going_is_refused(app_factory, sqlite_url) -> None:
    executor = HeldExecutor()
    with guest_on(app_factory(sqlite_url, executor=executor)) as learner:
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        first: list[httpx.Response] = []
        going = threading.Thread(target=lambda: first.append(learner.get(f"{attempt}/q/1/run")))
        going.start()
        assert executor.entered.wait(20)
        second = learner.get(f"{attempt}/q/1/run", headers={"Accept": "application/json"})
        executor.gate.set()
        going.join(20)
    assert second.status_code == 409
    assert "already have a run going" in second.json()["detail"]
    assert [name for name, _ in events(first[0].text)] == ["output", "result"]
    assert len(executor.requests) == 1


def test_runs_beyond_the_learners_rate_are_refused(app_factory, sqlite_url) -> None:
    app = app_factory(sqlite_url, executor=FakeExecutor(), runs_per_learner="3/minute")
    with guest_on(app) as learner:
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        answers = [learner.get(f"{attempt}/q/1/run").status_code for _ in range(3)]
        refused = learner.get(f"{attempt}/q/1/run", headers={"Accept": "application/json"})
    assert answers == [200, 200, 200]
    assert refused.status_code == 429
    assert "wait" in refused.json()["detail"]
    assert int(refused.headers["Retry-After"]) >= 1  # the wait the message names


@dataclass
class Flooding(FakeExecutor):
    """A run printing `lines` chunks, then its result; `finished` once it has sent them all."""

    lines: int = 3 * MAX_OUTPUT_EVENTS
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    async def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        for _ in range(self.lines):
            yield OutputEvent(rank=0, stream="stdout", text="x")
            await asyncio.sleep(0)
        yield canned_result("x" * self.lines)
        self.finished.set()


def test_a_flood_of_output_reaches_the_page_capped_then_the_result() -> None:
    async def main() -> list[str]:
        frames = sse_events(Flooding(), RunRequest(code="", nproc=1))
        return [frame async for frame in frames]

    names = [name for name, _ in events("".join(asyncio.run(main())))]
    assert names == ["output"] * MAX_OUTPUT_EVENTS + ["capped", "result"]


def test_a_reader_that_does_not_read_does_not_hold_the_run() -> None:
    async def main() -> bool:
        executor = Flooding(lines=200)
        frames = sse_events(executor, RunRequest(code="", nproc=1))
        await anext(frames)  # then the reader stops reading
        try:
            await asyncio.wait_for(executor.finished.wait(), 20)
            return True
        except TimeoutError:
            return False
        finally:
            await frames.aclose()

    assert asyncio.run(main()), "the run was held by its reader"


@dataclass
class SandboxedHeld(HeldExecutor):
    """A held executor that says its runs are sandboxed, so a lab may run learner code on it."""

    def health(self) -> dict[str, Any] | None:
        return {"status": "ok", "torch": "2.13.0+cpu", "sandbox": "on"}


def test_a_lab_run_going_refuses_the_same_learners_run_it_and_keeps_the_cache_clean(
    app_factory, sqlite_url, tmp_path
) -> None:
    """Run it and labs share one gate: a learner's lab run holds their turn (409 for a Run it
    meanwhile, the turn back once it ends); the lab's run asks the executor to store nothing."""
    content = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES / "runs", content / "runs")
    shutil.copytree(FIXTURES / "labs" / "hello", content / "hello")
    executor = SandboxedHeld()
    app = app_factory(sqlite_url, executor=executor, challenges_dir=content)
    with guest_on(app) as learner:
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        learner.get(LAB_STEP)
        started = learner.client.post(
            f"{LAB_STEP}/runs",
            data={"code": "print(1)\n", "nproc": "2", "csrf_token": learner.csrf},
            headers={"Accept": "application/json"},
        )
        assert started.status_code == 201, started.text
        assert executor.entered.wait(20)
        refused = learner.get(f"{attempt}/q/1/run", headers={"Accept": "application/json"})
        executor.gate.set()
        lab_events = learner.get(started.json()["events"]).text  # to the lab run's end
        after = learner.get(f"{attempt}/q/1/run")
    assert refused.status_code == 409
    assert "already have a run going" in refused.json()["detail"]
    assert "event: end" in lab_events
    assert after.status_code == 200 and events(after.text)[-1][0] == "result"
    lab_order, run_it_order = executor.requests
    assert (lab_order.store_result, lab_order.use_cache) == (False, False)
    assert (run_it_order.store_result, run_it_order.use_cache) == (True, True)

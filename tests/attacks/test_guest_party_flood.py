"""attack: extra guest accounts hold up everyone else's runs. A guest costs one request and one
address may make 240 a minute; six guests from one address each started a lab run of `while
True: pass` (held for the lab's whole 20 s time-out, 2 slots), and a seventh learner's trivial
run waited its turn behind all of them, until +61.4 s: (guests / slots) x time-out, about 40
minutes with 240 guests. Turns went round-robin per learner, and nothing bounded the line.
expect: the guests of one address are one party and share one turn, so a learner from another
address, and a signed-in learner from the attackers' own address (a party of one), get the next
free slot ahead of every waiting guest of that address; one party may have at most
RANKLAB_RUNS_WAITING_PER_PARTY runs waiting (429 past it) and all parties together at most
RANKLAB_RUNS_WAITING (503 past it), each refusal with Retry-After and a message the page shows.
A real uvicorn server behind a trusted proxy (X-Forwarded-For names each visitor), a fake
executor at the seam."""

from __future__ import annotations

import queue
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import httpx

from app.executor_client import RunEvent
from app.serving import proxy_options
from executor.contract import RunRequest
from tests.conftest import FIXTURES
from tests.support.accounts import sign_up
from tests.support.fake_executor import FakeExecutor, canned_result
from tests.support.learner import Learner
from tests.support.live import serving

LAB_STEP = "/labs/hello-ranks/steps/print-rank"
ATTACKER = "203.0.113.7"
HANG = "while True: pass\n"


@dataclass
class Hanging(FakeExecutor):
    """A sandboxed executor whose runs hang until the test ends one (any one: a slot frees)."""

    started: queue.Queue[str] = field(default_factory=queue.Queue)  # each run's code, in order
    ended: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def health(self) -> dict[str, Any] | None:
        return {"status": "ok", "torch": "2.13.0+cpu", "sandbox": "on"}

    async def astream(self, request: RunRequest) -> AsyncIterator[RunEvent]:
        self.requests.append(request)
        self.started.put(request.code)
        await anyio.to_thread.run_sync(self.ended.acquire, True, 30)
        yield canned_result(*[""] * request.nproc)


@dataclass
class Site:
    """The app served on loopback, and the browsers opened on it."""

    app: Any
    url: str
    browsers: list[httpx.Client] = field(default_factory=list)

    def visitor(self, address: str) -> Learner:
        """A new browser at `address` (the proxy's X-Forwarded-For), started as a guest."""
        client = httpx.Client(
            base_url=self.url,
            headers={"X-Forwarded-For": address},
            follow_redirects=True,
            timeout=30,
        )
        self.browsers.append(client)
        learner = Learner(client)  # type: ignore[arg-type]
        learner.start_as_guest()
        learner.get(LAB_STEP)
        return learner


@contextmanager
def lab_server(app_factory, sqlite_url, tmp_path, **settings: object) -> Iterator[Site]:
    """The app with the lab fixture and 2 run slots, served behind a trusted proxy."""
    content = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "labs" / "hello", content / "hello")
    executor = Hanging()
    app = app_factory(
        sqlite_url, executor=executor, challenges_dir=content, runs_at_once=2, **settings
    )
    site = None
    try:
        with serving(app, **proxy_options("127.0.0.1")) as url:
            site = Site(app, url)
            yield site
    finally:
        executor.ended.release(100)  # whatever still hangs ends, so the server can stop
        for browser in site.browsers if site is not None else []:
            browser.close()


def run_lab(learner: Learner, code: str) -> httpx.Response:
    """Start a lab run of `code` on 2 ranks, as the lab page's script does."""
    return learner.post(
        f"{LAB_STEP}/runs", {"code": code, "nproc": "2"}, headers={"Accept": "application/json"}
    )


def waiting_becomes(app: Any, count: int) -> None:
    """Wait until exactly `count` turns wait at the gate (each run's task joins the line)."""
    deadline = time.monotonic() + 20
    while app.state.run_gate.waiting() != count:
        assert time.monotonic() < deadline, f"{app.state.run_gate.waiting()} waiting, not {count}"
        time.sleep(0.01)


def flood(site: Site, guests: int) -> None:
    """`guests` guests from the attacker's address each start a hanging run: two run, the
    rest wait in line."""
    sybils = [site.visitor(ATTACKER) for _ in range(guests)]
    for number, sybil in enumerate(sybils):
        assert run_lab(sybil, f"# sybil {number}\n{HANG}").status_code == 201
    waiting_becomes(site.app, guests - 2)


def next_started(app: Any) -> str:
    """End one hanging run; the code of the run that takes the slot it frees."""
    executor: Hanging = app.state.executor
    executor.ended.release()
    return executor.started.get(timeout=20)


def test_a_learner_from_another_address_gets_the_next_free_slot(app_factory, sqlite_url, tmp_path):
    with lab_server(app_factory, sqlite_url, tmp_path) as site:
        flood(site, guests=6)
        running = [site.app.state.executor.started.get() for _ in range(2)]
        assert all("sybil" in code for code in running)
        other = site.visitor("198.51.100.20")
        assert run_lab(other, "print('mine')\n").status_code == 201
        waiting_becomes(site.app, 5)
        assert next_started(site.app) == "print('mine')\n"  # not after the four sybils waiting


def test_a_signed_in_learner_at_the_attackers_address_gets_the_next_free_slot(
    app_factory, sqlite_url, tmp_path
):
    with lab_server(app_factory, sqlite_url, tmp_path) as site:
        flood(site, guests=6)
        running = [site.app.state.executor.started.get() for _ in range(2)]
        assert all("sybil" in code for code in running)
        neighbour = site.visitor(ATTACKER)
        sign_up(neighbour, "neighbour", sqlite_url)
        neighbour.get(LAB_STEP)
        assert run_lab(neighbour, "print('signed in')\n").status_code == 201
        waiting_becomes(site.app, 5)
        assert next_started(site.app) == "print('signed in')\n"


def test_the_line_is_bounded_per_address_and_in_all(app_factory, sqlite_url, tmp_path):
    bounds = {"runs_waiting_per_party": 3, "runs_waiting": 4}
    with lab_server(app_factory, sqlite_url, tmp_path, **bounds) as site:
        flood(site, guests=5)  # two run, three wait: the address's bound
        refused = run_lab(site.visitor(ATTACKER), HANG)
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1
        assert "from your network" in refused.json()["detail"]
        assert run_lab(site.visitor("198.51.100.20"), HANG).status_code == 201
        waiting_becomes(site.app, 4)  # every bound reached: three of the attacker's, one other's
        crowded = run_lab(site.visitor("198.51.100.21"), "print(1)\n")
        assert crowded.status_code == 503
        assert int(crowded.headers["Retry-After"]) >= 1
        assert "Many runs are waiting" in crowded.json()["detail"]
        assert site.app.state.run_gate.waiting() == 4

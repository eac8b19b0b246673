"""A lecture hall behind one NAT address: 200 learners sign up, log out and log in again.

Every request comes from 127.0.0.1, as a class behind one address looks to the server. The
learners arrive over `--minutes` (5 by default: a lecture's first minutes), each with a browser of
its own (httpx, cookies kept): the sign-up form, Sign up, Log out, the log-in form, one wrong
password for one learner in ten, then the right one. Runs against `ranklab serve --no-executor`
on a fresh SQLite database with the default limits, and prints how many were refused (429) at
each step: the promise is none. Then one guesser from the same address tries wrong passwords
on other accounts until refused, and the count is printed: the limit guessing meets.

    .venv/bin/python bench/bench_signup.py [--learners 200] [--minutes 5]

Numbers, not assertions (a shared machine is noisy); the same promise is a test:
tests/accounts/test_throttle.py.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_class import serve, stop

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
_BUSY: Counter[str] = Counter()  # 503s (busy: sent again), per path
_DROPPED: Counter[str] = Counter()  # connections dropped before a response (sent again)


async def _post(client: httpx.AsyncClient, path: str, form: dict[str, str]) -> httpx.Response:
    """POST as the busy page does: a 503 is sent again after its Retry-After; a connection the
    server dropped (uvicorn under load) is counted and sent again, as a person would."""
    while True:
        try:
            page = await client.post(path, data=form)
        except httpx.TransportError as error:
            _DROPPED[f"{path} {type(error).__name__}"] += 1
            await asyncio.sleep(1)
            continue
        if page.status_code != 503:
            return page
        _BUSY[path] += 1
        await asyncio.sleep(float(page.headers.get("retry-after", "1")))


async def _form(client: httpx.AsyncClient, path: str) -> str:
    while True:
        try:
            page = await client.get(path)
        except httpx.TransportError as error:
            _DROPPED[f"GET {path} {type(error).__name__}"] += 1
            await asyncio.sleep(1)
            continue
        return _CSRF.search(page.text)[1]  # type: ignore[index]


async def learner(url: str, number: int, start_s: float, statuses: Counter[str]) -> None:
    """Sign up, log out, log in (with a typo first for one in ten); count each step's status."""
    await asyncio.sleep(start_s)
    name, password = f"student{number:03}", f"lecture-hall-{number}"
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        csrf = await _form(client, "/register")
        page = await _post(
            client, "/register", {"csrf_token": csrf, "username": name, "password": password}
        )
        statuses[f"sign up {page.status_code}"] += 1
        csrf = await _form(client, "/")
        await _post(client, "/logout", {"csrf_token": csrf})
        tries = ["a typo", password] if number % 10 == 0 else [password]
        for attempt in tries:
            csrf = await _form(client, "/login")
            page = await _post(
                client, "/login", {"csrf_token": csrf, "username": name, "password": attempt}
            )
            statuses[
                f"log in ({'wrong' if attempt == 'a typo' else 'right'}) {page.status_code}"
            ] += 1


async def guesser(url: str) -> int:
    """Wrong passwords on other learners' accounts from the same address, until refused (once
    the hall's own typos have left the minute's window)."""
    await asyncio.sleep(61)
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for tries in range(1, 1000):
            csrf = await _form(client, "/login")
            page = await _post(
                client,
                "/login",
                {"csrf_token": csrf, "username": f"student{tries:03}", "password": "guess"},
            )
            if page.status_code == 429:
                return tries - 1
    return 999


async def hall(url: str, learners: int, minutes: float) -> tuple[Counter[str], int]:
    statuses: Counter[str] = Counter()
    spread = minutes * 60
    await asyncio.gather(
        *(learner(url, n, spread * n / learners, statuses) for n in range(learners))
    )
    return statuses, await guesser(url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--minutes", type=float, default=5.0)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-signup-") as folder:
        process, url = serve(f"sqlite:///{folder}/hall.db", 1, Path(folder))
        try:
            began = time.monotonic()
            statuses, guesses = asyncio.run(hall(url, arguments.learners, arguments.minutes))
            took = time.monotonic() - began
        finally:
            stop(process)
    over = f"{arguments.minutes:g} min ({took:.0f} s, the guesser's minute included)"
    print(f"{arguments.learners} learners from one address over {over}:")
    for step, count in sorted(statuses.items()):
        print(f"  {step}: {count}")
    print(f"busy (503, sent again after Retry-After): {dict(_BUSY)}")
    print(f"connections dropped before a response (sent again): {dict(_DROPPED)}")
    refused = sum(count for step, count in statuses.items() if step.endswith(" 429"))
    print(f"refused (429): {refused}")
    print(f"a guesser from the same address, then: {guesses} wrong passwords before a 429")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

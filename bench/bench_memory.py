"""Play the timed sets through HTTP with strategies that need no knowledge, and count badges.

Two strategies, each played by fresh guests (2 per set by default) on every set named:
- "memory": a first attempt guessing (the first option shown, or 0), remembering the key each
  closed question then shows (the options' texts, or the number); then a retake answering from
  that memory. Badges are counted on the retakes: a badge counts a question only on first sight
  of its variant, so a retake of the same questions must earn none.
- "longest": the longest option first and, if a second try is allowed, the second longest
  (a number question gets 0); its badges are counted on every attempt it plays.
Prints, per set and strategy, attempts played, badges earned, and the questions answered right,
then the totals. Numbers, not assertions: the test (tests/attempts/test_bench_memory.py) runs
it against a test server on a fixture course and asserts 0 badges.

    .venv/bin/python bench/bench_memory.py [--url http://127.0.0.1:8000] [--sets a,b,c,d]
        [--guests 2]

Without --url it serves the repository's challenges/ itself (a temporary SQLite database, no
executor) on a loopback port, and plays every set.
"""

from __future__ import annotations

import argparse
import re
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script: `app` from this checkout

CSRF_META = re.compile(r'<meta name="csrf-token" content="([0-9a-f]+)">')
ATTEMPT = re.compile(r"/attempts/(\d+)")
BADGE = 'data-testid="badge"'
Picker = Callable[[dict[str, Any], int, dict[str, list[str]]], list[str]]


@dataclass
class Tally:
    """What one strategy got on one set."""

    attempts: int = 0
    badges: int = 0
    right: int = 0
    questions: int = 0


class Guest:
    """A visitor who becomes a guest with their first Start, driving the app like a browser."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.csrf = ""

    def __enter__(self) -> Guest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def page(self, url: str) -> httpx.Response:
        response = self.http.get(url)
        found = CSRF_META.search(response.text)
        if found:
            self.csrf = found[1]
        return response

    def post(self, url: str, data: dict[str, Any], **headers: str) -> httpx.Response:
        form = {"csrf_token": self.csrf, **data}
        return self.http.post(url, data=form, headers=headers)

    def start(self, set_id: str) -> int:
        self.page(f"/sets/{set_id}")
        response = self.post(f"/sets/{set_id}/start", {})
        found = ATTEMPT.search(response.headers.get("location", ""))
        if response.status_code != 303 or not found:
            raise RuntimeError(f"start {set_id}: {response.status_code} {response.text[:200]}")
        return int(found[1])

    def play(
        self, set_id: str, pick: Picker, memory: dict[str, list[str]]
    ) -> tuple[bool, int, int]:
        """One attempt: (badge earned, questions right, questions); `memory` gains its keys."""
        attempt = self.start(set_id)
        number = right = 0
        while True:
            number += 1
            if self.page(f"/attempts/{attempt}/q/{number}").status_code == 404:
                break  # (the page also gives the form's token, renewed as a guest signs in)
            asked = self.http.get(f"/api/attempts/{attempt}/q/{number}")
            view = asked.json()["question"]
            tries = 0
            while view["status"] == "open" and view["attempts_left"] > 0:
                choice = pick(view, tries, memory)
                tries += 1
                token = secrets.token_urlsafe(16)
                sent = self.post(
                    f"/attempts/{attempt}/q/{number}/answer",
                    {"choice": choice, "submission": token},
                    accept="application/json",
                )
                if sent.status_code == 409:
                    break  # refused (time up): closed as it stands
                if sent.status_code != 200:
                    raise RuntimeError(f"answer: {sent.status_code} {sent.text[:200]}")
                view = sent.json()["question"]
            view = self.http.get(f"/api/attempts/{attempt}/q/{number}").json()["question"]
            right += view["status"] == "correct"
            memory[view["id"]] = remembered(view)
            moved = self.post(f"/attempts/{attempt}/next", {})
            if moved.status_code != 303:
                raise RuntimeError(f"next: {moved.status_code} {moved.text[:200]}")
            if "/results" in moved.headers.get("location", ""):
                break
        results = self.page(f"/attempts/{attempt}/results").text
        return BADGE in results, right, number


def remembered(view: dict[str, Any]) -> list[str]:
    """What a closed question showed as its key: the keyed options' texts, or the number."""
    options = view.get("options")
    if isinstance(options, list):
        return [option["text"] for option in options if option.get("key")]
    answer = view.get("answer")
    return [] if answer is None else [str(answer)]


def from_memory(view: dict[str, Any], tries: int, memory: dict[str, list[str]]) -> list[str]:
    """The options whose texts the key had on the first attempt (a guess where none match)."""
    keys = memory.get(view["id"], [])
    options = view.get("options")
    if isinstance(options, list):
        picked = [option["value"] for option in options if option["text"] in keys]
        return picked or [options[min(tries, len(options) - 1)]["value"]]
    return keys[:1] or ["0"]


def first_shown(view: dict[str, Any], tries: int, memory: dict[str, list[str]]) -> list[str]:
    """A guess: the option shown first (then the next), or 0."""
    options = view.get("options")
    if isinstance(options, list):
        return [options[min(tries, len(options) - 1)]["value"]]
    return ["0"]


def longest(view: dict[str, Any], tries: int, memory: dict[str, list[str]]) -> list[str]:
    """The longest option first, then the second longest; 0 for a number."""
    options = view.get("options")
    if isinstance(options, list):
        ranked = sorted(options, key=lambda option: len(option["text"]), reverse=True)
        return [ranked[min(tries, len(ranked) - 1)]["value"]]
    return ["0"]


def play(base_url: str, set_ids: list[str], guests: int = 2) -> dict[str, dict[str, Tally]]:
    """Play both strategies on every set with `guests` fresh guests each; the tallies."""
    tallies: dict[str, dict[str, Tally]] = {}
    for set_id in set_ids:
        memory_tally, longest_tally = Tally(), Tally()
        for _ in range(guests):
            memory: dict[str, list[str]] = {}
            with Guest(base_url) as guest:
                guest.play(set_id, first_shown, memory)  # the first attempt: a guess, remembered
                badge, right, total = guest.play(set_id, from_memory, memory)
            _count(memory_tally, badge, right, total)
            with Guest(base_url) as guest:
                badge, right, total = guest.play(set_id, longest, {})
            _count(longest_tally, badge, right, total)
        tallies[set_id] = {"memory": memory_tally, "longest": longest_tally}
    return tallies


def _count(tally: Tally, badge: bool, right: int, total: int) -> None:
    tally.attempts += 1
    tally.badges += badge
    tally.right += right
    tally.questions += total


def report(tallies: dict[str, dict[str, Tally]]) -> str:
    """The tallies as lines to print."""
    lines = [f"{'set':<32} {'strategy':<8} {'attempts':>8} {'badges':>6} {'right':>9}"]
    totals: dict[str, Tally] = {}
    for set_id, by_strategy in tallies.items():
        for name, tally in by_strategy.items():
            lines.append(
                f"{set_id:<32} {name:<8} {tally.attempts:>8} {tally.badges:>6} "
                f"{tally.right:>4}/{tally.questions:<4}"
            )
            total = totals.setdefault(name, Tally())
            _count(total, False, tally.right, tally.questions)
            total.attempts += tally.attempts - 1
            total.badges += tally.badges
    for name, total in totals.items():
        lines.append(
            f"{'TOTAL':<32} {name:<8} {total.attempts:>8} {total.badges:>6} "
            f"{total.right:>4}/{total.questions:<4}"
        )
    return "\n".join(lines)


@contextmanager
def own_server(challenges: Path) -> Iterator[tuple[str, list[str]]]:
    """Serve `challenges` on a loopback port (a temporary SQLite file); its URL and set ids."""
    import uvicorn

    from app import migrations
    from app.config import Settings
    from app.main import create_app
    from executor.ports import free_port

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        migrations.upgrade(url)
        settings = Settings(
            environment="development",
            database_url=url,
            challenges_dir=challenges,
            executor_url=None,
            content_gate="valid",
        )  # type: ignore[call-arg]
        app = create_app(settings)
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            catalog = app.state.catalog
            yield f"http://127.0.0.1:{port}", list(catalog.sets)
        finally:
            server.should_exit = True
            thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running app (default: serve challenges/ here)")
    parser.add_argument("--sets", help="comma-separated set ids (default: every set)")
    parser.add_argument("--guests", type=int, default=2)
    parser.add_argument("--challenges", type=Path, default=REPO / "challenges")
    options = parser.parse_args()
    wanted = options.sets.split(",") if options.sets else None
    if options.url:
        if not wanted:
            parser.error("--sets is needed with --url")
        print(report(play(options.url, wanted, options.guests)))
        return
    with own_server(options.challenges) as (url, set_ids):
        print(report(play(url, wanted or set_ids, options.guests)))


if __name__ == "__main__":
    main()

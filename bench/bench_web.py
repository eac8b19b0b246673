"""Benchmark the web app's hot pages against a bare FastAPI + Jinja2 page, in one run.

Starts (a) the real app as `ranklab serve` starts it (one uvicorn process, its defaults, no
executor) on a migrated SQLite file in a temporary folder, seeded with a learner's session and an
attempt open on a question with a snippet, and (b) a bare FastAPI + Jinja2 app (same uvicorn,
one process) rendering pages of the same shape and size from memory. Loads each page of each
with wrk at 50 connections over loopback, one after the other, and prints req/s, p50, p99 and the
server's CPU time per request, with the ratios app/bare. Numbers, not assertions: on a shared
machine, run it twice and compare the CPU times, which load elsewhere disturbs least.

    .venv/bin/python bench/bench_web.py [--duration 10] [--connections 50] [--repeats 1]

Needs wrk (Debian/Ubuntu: `apt-get install -y wrk`; macOS: `brew install wrk`).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import DictLoader, Environment, select_autoescape

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script: `app` from this checkout

from executor.ports import free_port  # noqa: E402

CSRF_SEED = "bench-csrf-seed"  # a browser has this cookie after its first page
GOAL_RATIO = 0.5
GOAL_P99_MS = 100.0
WARM_UP_S = 2
UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


@dataclass(frozen=True)
class Measurement:
    """What wrk saw for one page on one server, and the server's CPU time per request."""

    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_ms: float | None


@dataclass(frozen=True)
class Server:
    """A server process under test and where to reach it."""

    name: str
    process: subprocess.Popen[bytes]
    url: str
    log: Path


def main() -> int:
    """Seed, start both servers, measure every page on both, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (spare the server)")
    parser.add_argument("--repeats", type=int, default=1, help="measure each page this often")
    parser.add_argument("--bare-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        return _serve_bare(args.bare_server)
    if shutil.which("wrk") is None:
        print(
            "bench_web needs wrk: `apt-get install -y wrk` (Debian/Ubuntu) or `brew install wrk`",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="ranklab-bench-web-") as folder:
        return _run(Path(folder), args)


def _run(folder: Path, args: argparse.Namespace) -> int:
    database_url = f"sqlite:///{folder / 'bench.db'}"
    token, question_path = _seed(database_url)
    cookie = f"ranklab_session={token}; ranklab_csrf={CSRF_SEED}"
    environment = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RANKLAB_ENVIRONMENT": "production",
        "RANKLAB_SECRET_KEY": secrets.token_hex(32),
    }
    serve = ["-m", "app.cli", "serve", "--no-executor", "--host", "127.0.0.1", "--port"]
    servers = [
        _start("app", serve, environment, folder),
        _start("bare", [__file__, "--bare-server"], environment, folder),
    ]
    pages = {"home": ("/", "/"), "question": (question_path, "/question")}
    try:
        for server in servers:
            _wait_until_up(server)
        _describe(servers, pages, cookie, args)
        met = True
        for name, paths in pages.items():
            for _ in range(args.repeats):
                app, bare = (
                    _wrk(server, path, cookie, args)
                    for server, path in zip(servers, paths, strict=True)
                )
                met = _report(name, app, bare) and met
    finally:
        for server in servers:
            _stop(server.process)
    verdict = "met" if met else "not met"
    print(f"\ngoal: app ≥ {GOAL_RATIO:.0%} of bare req/s and p99 < {GOAL_P99_MS:.0f} ms: {verdict}")
    return 0


def _seed(database_url: str) -> tuple[str, str]:
    """Migrate; create a learner with a session and an attempt open on a question with code."""
    from sqlmodel import Session

    from app import migrations
    from app.accounts import service as accounts
    from app.accounts.models import TimeAccommodation
    from app.attempts import service as attempts
    from app.challenges.catalog import Catalog
    from app.challenges.schema import ChoiceBase
    from app.config import ROOT
    from app.db import make_engine

    migrations.upgrade(database_url)
    catalog = Catalog.load(ROOT / "challenges")
    engine = make_engine(database_url)
    now = datetime.now(UTC)
    with Session(engine, expire_on_commit=False) as session:
        user = accounts.create_guest(session, now)
        user.time_accommodation = TimeAccommodation.UNTIMED  # the question stays open throughout
        session.add(user)
        session.commit()
        assert user.id is not None
        token = accounts.open_session(session, user, now, days=1)
        loaded = catalog.ordered()[0]
        attempt = attempts.start_or_resume(session, user.id, loaded.challenge_set, now, None)
        assert attempt.id is not None
        while True:  # answer and move on until the open question shows a snippet
            row = attempts.item_at(session, attempt.id, attempt.current_position)
            item = attempts.catalog_item(catalog, attempt, row)
            if row.item_id in loaded.code or not isinstance(item, ChoiceBase):
                break
            attempts.submit(session, row, item, sorted(item.answer_ids), 3.0, now)
            attempt = attempts.advance(session, attempt, loaded.challenge_set, 3.0, now, None)
    engine.dispose()
    return token, f"/attempts/{attempt.id}/q/{attempt.current_position + 1}"


def _start(name: str, arguments: list[str], environment: dict[str, str], folder: Path) -> Server:
    port = free_port()
    log = folder / f"{name}.log"
    with log.open("wb") as output:  # a file, never a pipe nobody reads
        process = subprocess.Popen(
            [sys.executable, *arguments, str(port)],
            cwd=REPO,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    return Server(name, process, f"http://127.0.0.1:{port}", log)


def _wait_until_up(server: Server) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.log.read_text()[-3000:]
            raise SystemExit(f"{server.name} exited ({server.process.returncode}):\n{tail}")
        try:
            if httpx.get(server.url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{server.name} did not answer within 60 s:\n{server.log.read_text()[-3000:]}")


def _describe(
    servers: list[Server], pages: dict[str, tuple[str, str]], cookie: str, args: argparse.Namespace
) -> None:
    """Check that each page renders as it should and print the sizes and the load."""
    markers = {"home": "set-card", "question": 'data-testid="question"'}
    for name, paths in pages.items():
        sizes = []
        for server, path in zip(servers, paths, strict=True):
            response = httpx.get(server.url + path, headers={"Cookie": cookie}, timeout=10)
            if response.status_code != 200:
                raise SystemExit(f"{server.name} {path} answered {response.status_code}")
            if server.name == "app" and markers[name] not in response.text:
                raise SystemExit(f"the app's {name} page does not show {markers[name]!r}")
            sizes.append(f"{server.name} {len(response.content)} bytes")
        print(f"{name} page: " + ", ".join(sizes))
    print(
        f"wrk: {args.connections} connections, {args.threads} thread(s), {args.duration} s per "
        f"measurement after {WARM_UP_S} s of warm-up, loopback; {os.cpu_count()} CPUs\n"
    )
    header = f"{'page':<10}{'server':<10}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
    print(header + f"{'CPU ms/req':>12}")


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wrk(server: Server, path: str, cookie: str, args: argparse.Namespace) -> Measurement:
    """Warm up, then load the page and parse wrk's report."""
    url = server.url + path
    base = ["wrk", "-t", str(args.threads), "-c", str(args.connections), "-H", f"Cookie: {cookie}"]
    subprocess.run([*base, "-d", f"{WARM_UP_S}s", url], check=True, capture_output=True)
    before = _cpu_seconds(server.process.pid)
    run = [*base, "-d", f"{args.duration}s", "--latency", url]
    report = subprocess.run(run, check=True, capture_output=True, text=True).stdout
    after = _cpu_seconds(server.process.pid)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", report)
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", report, re.MULTILINE)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", report, re.MULTILINE)
    if rate is None or p50 is None or p99 is None:
        raise SystemExit(f"cannot read wrk's report:\n{report}")
    refused = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", report)
    failed = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", report
    )
    errors = int(refused[1]) if refused else 0
    errors += sum(int(count) for count in failed.groups()) if failed else 0
    requests = float(rate[1]) * args.duration
    cpu_ms = None
    if before is not None and after is not None and requests:
        cpu_ms = 1000 * (after - before) / requests
    return Measurement(
        float(rate[1]),
        float(p50[1]) * UNITS_MS[p50[2]],
        float(p99[1]) * UNITS_MS[p99[2]],
        errors,
        cpu_ms,
    )


def _report(page: str, app: Measurement, bare: Measurement) -> bool:
    """Print both rows and the ratios; return whether the app met the goal on this page."""
    for label, result in (("app", app), ("bare", bare)):
        cpu = f"{result.cpu_ms:>12.2f}" if result.cpu_ms is not None else f"{'n/a':>12}"
        print(
            f"{page:<10}{label:<10}{result.requests_per_s:>9.0f}{result.p50_ms:>9.1f}"
            f"{result.p99_ms:>9.1f}{result.errors:>8}{cpu}"
        )
    ratio = app.requests_per_s / bare.requests_per_s if bare.requests_per_s else 0.0
    cpu_ratio = f"{app.cpu_ms / bare.cpu_ms:>12.2f}" if app.cpu_ms and bare.cpu_ms else ""
    ok = ratio >= GOAL_RATIO and app.p99_ms < GOAL_P99_MS and not app.errors
    verdict = "goal met" if ok else "goal not met"
    print(
        f"{page:<10}{'app/bare':<10}{ratio:>9.2f}{app.p50_ms / bare.p50_ms:>9.2f}"
        f"{app.p99_ms / bare.p99_ms:>9.2f}{'':>8}{cpu_ratio}   {verdict}"
    )
    return ok


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


BARE_BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<link rel="stylesheet" href="/static/app.css"></head>
<body><header><nav><a href="/">RankLab</a> <a href="/me/progress">My progress</a>
<span>{{ user }}</span></nav></header>
<main>{% block content %}{% endblock %}</main></body></html>
"""
BARE_PAGE = """{% extends "base.html" %}{% block content %}
<h1>{{ title }}</h1>
{% for card in cards %}<article data-id="{{ card.id }}"><h2>{{ card.title }}</h2>
<p>{{ card.text }}</p><ul>{% for fact in card.facts %}<li>{{ fact }}</li>{% endfor %}</ul>
</article>{% endfor %}
{% endblock %}
"""
BARE_TEXT = "Distributed data parallel training keeps one replica of the model per rank. " * 4


def bare_app() -> FastAPI:
    """The baseline: FastAPI + Jinja2 pages of the app's size, no database, no middleware."""
    environment = Environment(
        loader=DictLoader({"base.html": BARE_BASE, "page.html": BARE_PAGE}),
        autoescape=select_autoescape(default=True),
    )
    templates = Jinja2Templates(env=environment)

    def page(request: Request, title: str, count: int) -> HTMLResponse:
        cards = [
            {"id": n, "title": f"{title} {n}", "text": BARE_TEXT, "facts": ["5 questions", "10:00"]}
            for n in range(count)
        ]
        context = {"title": title, "cards": cards, "user": "Guest"}
        response: HTMLResponse = templates.TemplateResponse(request, "page.html", context)
        return response

    app = FastAPI()

    @app.get("/", response_class=HTMLResponse)
    async def home(request: Request) -> HTMLResponse:
        return page(request, "Challenges", 9)

    @app.get("/question", response_class=HTMLResponse)
    async def question(request: Request) -> HTMLResponse:
        return page(request, "Question", 18)

    return app


def _serve_bare(port: int) -> int:
    # Served as `ranklab serve` serves the app: one process, uvicorn's defaults, no access log.
    uvicorn.run(bare_app(), host="127.0.0.1", port=port, log_level="info", access_log=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A class at once: N learners start the same timed set together, answer, move on, see results.

Each learner is a browser of its own (its own cookies, one keep-alive connection) that goes
through the real flow as a browser would, redirects followed one by one: the set's page, Start
(signing in as a guest), the question; then for each of the set's questions, 0.5 to 2 s of
thought, an answer (wrong first half of the time, then a second try), the question again with
its feedback, Next. Then the results page. The learners start within the first 5 s. A 503 is
treated as the busy page treats it: the same request (the same submission token) is sent again
after Retry-After; it is counted apart from errors, and the line "each step" times each step
from its first send to the response that ended it, the waits for Retry-After included.

Runs against `ranklab serve --no-executor` on a fresh migrated database: SQLite with 1 and 2
worker processes and PostgreSQL with 2 (a private server started from Debian's binaries, or
--postgres-url), and prints requests/s, p50/p95/p99 per kind of request, errors, time-outs,
and answers acknowledged (a 303 reached the learner) against answers stored (rows), and the
CPU per request of the server and of this load tool.

The browsers are bench/class_client.py's (`--client lean`, on uvloop's event loop): in a real
class each browser is on a machine of its own, so here, on the server's cores, the tool's own
CPU is overhead that inflates the latencies it measures, and it is kept small. `--client httpx`
runs the same flow on httpx clients (what the tool used before); `--client lean httpx` runs
both, one after the other on fresh servers, for a side-by-side comparison.

    .venv/bin/python bench/bench_class.py [--learners 200 500] [--configs sqlite-1 ...]
    .venv/bin/python bench/bench_class.py --learners 200 --configs sqlite-1 --client lean httpx

Numbers, not assertions: on a shared machine, note the load (the script prints it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import glob
import html
import itertools
import os
import random
import re
import resource
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# httpcore asks sniffio which async library runs, per request, by importing it; where it is not
# installed that failed import searches sys.path every time (a tenth of the load tool's time).
# None in sys.modules makes the import fail at once, and httpcore then assumes asyncio: right.
sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

import httpx  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script: `app` from this checkout

from bench.class_client import Browser as LeanBrowser  # noqa: E402
from bench.class_client import Form, ProtocolError, Response  # noqa: E402
from executor.ports import free_port  # noqa: E402

SET_ID = "batchnorm-across-ranks"  # 7 timed questions, two tries each
START_SPREAD_S = 5.0
THINK_S = (0.5, 2.0)
WRONG_FIRST = 0.5
TIMEOUT_S = 60.0
CONFIGS = {"sqlite-1": ("sqlite", 1), "sqlite-2": ("sqlite", 2), "postgres-2": ("postgres", 2)}
_CSRF_AT = b'<meta name="csrf-token" content="'
_SUBMISSION_AT = b'name="submission" value="'
_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')  # class_cpu.py's, on text
_SUBMISSION = re.compile(r'name="submission" value="([^"]+)"')
_MESSAGE = re.compile(r'data-testid="error-message">([^<]*)<')
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


@dataclass
class Tally:
    """What the learners saw: latencies per kind of request, errors, answers acknowledged."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    # Per step the learner took: from its first send to the response that ended it, the busy
    # page's waits and its resends included (what a learner waited; equal where none was busy).
    waited: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    busy: int = 0
    timeouts: int = 0
    acknowledged: int = 0
    finished: int = 0
    connections: int = 0
    first: float = 0.0
    last: float = 0.0


_RESUME = re.compile(r"^/attempts/\d+$")  # where the attempt stands: it redirects on


def kind_of(location: str) -> str:
    """The kind of request a redirect to `location` is: resume, results or a question."""
    if _RESUME.match(location):
        return "resume"
    return "results" if location.endswith("/results") else "question"


class Failed(Exception):
    """A learner could not go on (an error was counted)."""


class Page(Protocol):
    """A response as the learners read it (class_client's, or httpx's made one by HttpxBrowser)."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...  # looked up by lower-case name

    @property
    def body(self) -> bytes: ...

    @property
    def elapsed(self) -> float: ...  # seconds, from the request's sending to its last byte

    @property
    def text(self) -> str: ...


class Browser(Protocol):
    """A learner's browser: one connection, its own cookies, redirects not followed."""

    connections: int

    async def get(self, path: str) -> Page: ...

    async def post(self, path: str, form: Form) -> Page: ...

    async def aclose(self) -> None: ...


class HttpxBrowser:
    """The same browser on an httpx client (`--client httpx`): what the tool used before."""

    # A connection idle for 1.5 s is dropped by the client well before uvicorn's 5 s keep-alive
    # ends it, as browsers do, so no request goes out on a connection the server is closing.
    LIMITS = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=1.5)
    # One TLS context for all (plain HTTP here, but each client would otherwise load the
    # system's CA certificates: a quarter of the tool's time at 500 learners).
    TLS = ssl.create_default_context()

    def __init__(self, url: str, timeout: float) -> None:
        self.client = httpx.AsyncClient(
            base_url=url, timeout=timeout, limits=self.LIMITS, verify=self.TLS
        )
        self.connections = 0  # httpx does not say; not counted

    async def get(self, path: str) -> Page:
        return await self._timed(self.client.get(path))

    async def post(self, path: str, form: Form) -> Page:
        return await self._timed(self.client.post(path, data=form))

    async def aclose(self) -> None:
        await self.client.aclose()

    @staticmethod
    async def _timed(sending: Awaitable[httpx.Response]) -> Page:
        began = time.perf_counter()
        try:
            response = await sending
        except httpx.TimeoutException as error:
            raise TimeoutError(str(error)) from error
        return Response(
            response.status_code,
            response.headers,  # type: ignore[arg-type]  # a case-insensitive mapping
            response.content,
            time.perf_counter() - began,
        )


CLIENTS: dict[str, Callable[[str, float], Browser]] = {"lean": LeanBrowser, "httpx": HttpxBrowser}
LOOPS = ("uvloop", "asyncio")


@dataclass
class Learner:
    """One learner's browser."""

    browser: Browser
    tally: Tally
    rng: random.Random

    async def request(self, kind: str, method: str, path: str, **form: str) -> Page:
        """Send one request (again after Retry-After while busy); time it under `kind`."""
        fields: Form = form
        began = time.perf_counter()
        while True:
            try:
                if method == "GET":
                    response = await self.browser.get(path)
                else:
                    response = await self.browser.post(path, fields)
            except TimeoutError as error:
                self.tally.timeouts += 1
                raise Failed(f"{kind}: time-out") from error
            except (httpx.HTTPError, ProtocolError, OSError) as error:
                self.tally.errors[f"{kind}: {type(error).__name__}"] += 1
                raise Failed(kind) from error
            self.tally.latencies[kind].append(response.elapsed)
            self.tally.last = time.perf_counter()
            if response.status != 503:
                break
            self.tally.busy += 1
            retry_after = float(response.headers.get("retry-after", "1"))
            await asyncio.sleep(retry_after * (1 + self.rng.random()))  # as the busy page does
            if method == "POST":  # the busy page's form: the same fields, a first-arrival stamp
                fields = _resend_fields(response.text) or fields
        self.tally.waited.append(time.perf_counter() - began)
        if response.status not in (200, 303):
            said = _MESSAGE.search(response.text)
            reason = f" {html.unescape(said[1])}" if said else ""
            self.tally.errors[f"{kind}: {response.status}{reason}"] += 1
            raise Failed(f"{kind}: {response.status}")
        return response

    async def follow(self, response: Page, kind: str) -> Page:
        """Follow one redirect as its own request."""
        return await self.request(kind, "GET", response.headers["location"])

    async def arrive(self, response: Page) -> Page:
        """Follow redirects, each its own request named by where it goes, to a page."""
        while response.status in (302, 303):
            response = await self.follow(response, kind_of(response.headers["location"]))
        return response

    async def think(self) -> None:
        await asyncio.sleep(self.rng.uniform(*THINK_S))


async def take_the_set(learner: Learner, answers: list[tuple[str, str]], delay: float) -> None:
    """The whole flow for one learner (`answers`: the right and a wrong option per question)."""
    await asyncio.sleep(delay)
    page = await learner.request("set page", "GET", f"/sets/{SET_ID}")
    csrf = _value(page.body, _CSRF_AT)
    started = await learner.request("start", "POST", f"/sets/{SET_ID}/start", csrf_token=csrf)
    resumed = await learner.follow(started, "resume")
    question = await learner.follow(resumed, "question")
    base = started.headers["location"]  # /attempts/{id}
    for number, (right, wrong) in enumerate(answers, start=1):
        tries = [wrong, right] if learner.rng.random() < WRONG_FIRST else [right]
        for choice in tries:
            await learner.think()
            csrf = _value(question.body, _CSRF_AT)
            token = _value(question.body, _SUBMISSION_AT)
            sent = await learner.request(
                "answer",
                "POST",
                f"{base}/q/{number}/answer",
                csrf_token=csrf,
                choice=choice,
                submission=token,
            )
            learner.tally.acknowledged += 1
            question = await learner.follow(sent, "question")
        moved = await learner.request(
            "next", "POST", f"{base}/next", csrf_token=_value(question.body, _CSRF_AT)
        )
        question = await learner.arrive(moved)  # the next question, or the results
    learner.tally.finished += 1


def _resend_fields(page: str) -> dict[str, list[str]]:
    """The fields the busy page sends again by itself (its form's hidden inputs)."""
    start = page.find('<form id="busy-retry"')
    if start < 0:
        return {}
    fields: dict[str, list[str]] = defaultdict(list)
    for name, value in _HIDDEN.findall(page[start : page.index("</form>", start)]):
        fields[name].append(html.unescape(value))
    return dict(fields)


def _value(body: bytes, marker: bytes) -> str:
    """The attribute value that follows `marker` in a page: a search for one string, not a
    decoding and a regular expression over the whole page."""
    start = body.find(marker)
    if start < 0:
        raise Failed(f"the page lacks {marker.decode()!r}")
    start += len(marker)
    value = body[start : body.index(b'"', start)].decode()
    return html.unescape(value) if "&" in value else value


def _found(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    if match is None:
        raise Failed(f"the page lacks {pattern.pattern!r}")
    return match[1]


def set_answers() -> list[tuple[str, str]]:
    """The right and a wrong option of each of the set's questions, in order."""
    from app.challenges.catalog import Catalog
    from app.challenges.schema import ChoiceBase
    from app.config import ROOT

    loaded = Catalog.load(ROOT / "challenges").get(SET_ID)
    assert loaded is not None
    answers = []
    for item in loaded.challenge_set.items:
        assert isinstance(item, ChoiceBase) and not item.multiple
        right = sorted(item.answer_ids)[0]
        wrong = next(option.id for option in item.options if option.id not in item.answer_ids)
        answers.append((right, wrong))
    return answers


async def run_class(
    url: str, learners: int, seed: int, answers: list[tuple[str, str]], client: str = "lean"
) -> Tally:
    """Send `learners` learners through the set together on `client`'s browsers; return what
    they saw. (`answers` are read before: loading the catalog is no cost of the requests.)"""
    tally = Tally()
    rng = random.Random(seed)
    browsers = [CLIENTS[client](url, TIMEOUT_S) for _ in range(learners)]
    tally.first = time.perf_counter()
    try:
        results = await asyncio.gather(
            *(
                take_the_set(
                    Learner(browser, tally, random.Random(rng.random())),
                    answers,
                    rng.uniform(0, START_SPREAD_S),
                )
                for browser in browsers
            ),
            return_exceptions=True,
        )
    finally:
        await asyncio.gather(*(browser.aclose() for browser in browsers))
    tally.connections = sum(browser.connections for browser in browsers)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, Failed):
            tally.errors[f"bench: {type(result).__name__}: {result}"] += 1
    return tally


def run_loop(main: Coroutine[Any, Any, Tally], loop: str) -> Tally:
    """Run the class on uvloop's event loop (libuv's, in C) or asyncio's own."""
    if loop == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


def stored_answers(database_url: str) -> int:
    """How many answers the database holds."""
    from sqlalchemy import create_engine, text

    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            return int(connection.execute(text("SELECT count(*) FROM submission")).scalar_one())
    finally:
        engine.dispose()


@contextlib.contextmanager
def private_postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a Unix socket (as `postgres` when run as root)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    initdb = Path(found[0]) if found else Path(shutil.which("initdb") or "initdb")
    bindir = initdb.parent
    base = Path(tempfile.mkdtemp(prefix="ranklab-bench-pg-"))
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    run = [*as_postgres, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
    subprocess.run([*run, "--no-sync"], check=True, capture_output=True)
    options = f"-k {sockets} -c listen_addresses='' -c max_connections=200"
    control = [*as_postgres, str(bindir / "pg_ctl"), "-D", str(data)]
    subprocess.run(
        [*control, "-o", options, "-w", "-l", str(base / "log"), "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={sockets}"
    finally:
        subprocess.run([*control, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def fresh_postgres(server_url: str) -> str:
    """A new empty database on the server, for one run."""
    from sqlalchemy import create_engine, make_url, text

    name = "bench_" + secrets.token_hex(4)
    engine = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def serve(
    database_url: str, workers: int, folder: Path, root: Path = REPO, python: str = sys.executable
) -> tuple[subprocess.Popen[bytes], str]:
    """Migrate, then start `ranklab serve` as production would (no executor), from the
    checkout `root` with its `python`."""
    from app import migrations

    migrations.upgrade(database_url)
    port = free_port()
    environment = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RANKLAB_ENVIRONMENT": "production",
        "RANKLAB_SECRET_KEY": secrets.token_hex(32),
    }
    command = [python, "-m", "app.cli", "serve", "--no-executor"]
    command += ["--workers", str(workers), "--host", "127.0.0.1", "--port", str(port)]
    log = folder / f"serve-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=root, env=environment, stdout=output, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # importing and loading the catalog: slow on a busy host
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"ranklab serve exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/", timeout=1).status_code == 200:
                return process, url
        time.sleep(0.3)
    raise SystemExit(f"ranklab serve did not answer in 180 s:\n{log.read_text()[-3000:]}")


def cpu_seconds(root: int) -> float:
    """User + system CPU time of a process and its children so far (Linux; 0 elsewhere)."""
    total, ticks = 0.0, os.sysconf("SC_CLK_TCK")
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            pid, rest = Path(stat).read_text().split(" ", 1)
        except OSError:
            continue
        fields = rest.rsplit(")", 1)[1].split()
        if int(pid) == root or int(fields[1]) == root:  # the server, or a worker of it
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and its workers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def report(
    name: str,
    learners: int,
    client: str,
    tally: Tally,
    stored: int,
    load: str,
    cpu: tuple[float, float],
) -> None:
    """Print one run's figures."""
    requests = sum(len(values) for values in tally.latencies.values())
    server_cpu, tool_cpu = (1000 * seconds / max(requests, 1) for seconds in cpu)
    span = max(tally.last - tally.first, 1e-9)
    every = sorted(value for values in tally.latencies.values() for value in values)
    errors = sum(tally.errors.values())
    opened = f", {tally.connections} connections opened" if tally.connections else ""
    print(
        f"\n== {name}, {learners} learners, {client}: {requests / span:.0f} requests/s over "
        f"{span:.0f} s, {requests} requests{opened}, {tally.finished}/{learners} finished; "
        f"load before: {load}"
    )
    print(f"{'request':<12}{'count':>7}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for kind, values in [*sorted(tally.latencies.items()), ("all", every)]:
        ordered = sorted(values)
        print(
            f"{kind:<12}{len(ordered):>7}{_ms(ordered, 0.50):>9}{_ms(ordered, 0.95):>9}"
            f"{_ms(ordered, 0.99):>9}{_ms(ordered, 1.0):>9}"
        )
    waited = sorted(tally.waited)
    print(
        f"{'each step':<12}{len(waited):>7}{_ms(waited, 0.50):>9}{_ms(waited, 0.95):>9}"
        f"{_ms(waited, 0.99):>9}{_ms(waited, 1.0):>9}  (first send to last response, busy waits in)"
    )
    print(
        f"errors {errors}, time-outs {tally.timeouts}, busy (503, sent again) {tally.busy}; "
        f"answers acknowledged {tally.acknowledged} / stored {stored}; CPU per request: "
        f"server {server_cpu:.2f} ms, load tool {tool_cpu:.2f} ms"
    )
    for problem, count in sorted(tally.errors.items()):
        print(f"  {count} × {problem}")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _ms(ordered: list[float], quantile: float) -> str:
    if not ordered:
        return "-"
    index = min(len(ordered) - 1, max(0, round(quantile * len(ordered)) - 1))
    return f"{ordered[index] * 1000:.0f}"


def run_one(
    args: argparse.Namespace,
    name: str,
    learners: int,
    client: str,
    loop: str,
    server_url: str | None,
    folder: Path,
    answers: list[tuple[str, str]],
) -> None:
    """One class on a fresh server and database; print its figures."""
    kind, workers = CONFIGS[name]
    if kind == "sqlite":
        database_url = f"sqlite:///{folder / f'{name}-{learners}-{secrets.token_hex(4)}.db'}"
    else:
        assert server_url is not None
        database_url = fresh_postgres(server_url)
    root = args.against.resolve() if args.against else REPO
    python = str(root / ".venv/bin/python") if args.against else sys.executable
    process, url = serve(database_url, workers, folder, root, python)
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    server_before, tool_before = cpu_seconds(process.pid), _own_cpu()
    try:
        tally = run_loop(run_class(url, learners, args.seed, answers, client), loop)
        cpu = (cpu_seconds(process.pid) - server_before, _own_cpu() - tool_before)
    finally:
        stop(process)
    report(name, learners, f"{client} on {loop}", tally, stored_answers(database_url), load, cpu)


def main() -> int:
    """Run each configuration at each class size, one after the other, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, nargs="+", default=[200, 500])
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--postgres-url", help="a server to create the databases on")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--against", type=Path, help="serve another checkout (with its .venv)")
    parser.add_argument(
        "--client",
        nargs="+",
        choices=sorted(CLIENTS),
        default=["lean"],
        help="the learners' browsers: lean (bench/class_client.py) or httpx; several: each in "
        "turn, on a fresh server and database",
    )
    parser.add_argument(
        "--loop",
        nargs="+",
        choices=LOOPS,
        default=["uvloop"],
        help="the load tool's event loop (several: each client on each in turn)",
    )
    parser.add_argument(
        "--sqlite-synchronous",
        choices=["full", "normal"],
        default=os.environ.get("RANKLAB_SQLITE_SYNCHRONOUS", "full"),
        help="SQLite's synchronous setting for the server (RANKLAB_SQLITE_SYNCHRONOUS)",
    )
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    os.environ["RANKLAB_SQLITE_SYNCHRONOUS"] = args.sqlite_synchronous  # the servers inherit
    print(
        f"SQLite synchronous={args.sqlite_synchronous}; "
        f"{os.cpu_count()} CPUs; set {SET_ID!r}; think {THINK_S[0]}-{THINK_S[1]} s; "
        f"starts spread over {START_SPREAD_S:.0f} s; client time-out {TIMEOUT_S:.0f} s"
    )
    answers = set_answers()
    # What is loaded by now (the app's modules and catalog, read for the answers) lives to the
    # end: frozen, the collector's full passes during a class do not walk it (as the server).
    gc.collect()
    gc.freeze()
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
        folder = Path(os.environ.get("BENCH_KEEP") or scratch)
        server_url = args.postgres_url
        for name in args.configs:
            if CONFIGS[name][0] == "postgres" and server_url is None:
                server_url = stack.enter_context(private_postgres())
            for learners in args.learners:
                for client, loop in itertools.product(args.client, args.loop):
                    run_one(args, name, learners, client, loop, server_url, folder, answers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The server's CPU time per request of a class's flow, by kind of request, one learner at a time.

`make bench-class` loads the server with hundreds of learners and prints its CPU per request
over all kinds together; this script says where that time goes. Learners go through the same
flow as bench_class.py (the set's page, Start as a guest, the question, each question answered
wrong then right, Next, the results), one after the other, no think time, against `ranklab
serve --no-executor` (one process) on a fresh SQLite or PostgreSQL database. The server's CPU
clock (ns, from the kernel) is read before each request: all it spent until the next request
began (the response and whatever it did after) is that request's. Numbers, not assertions.

    .venv/bin/python bench/class_cpu.py [--learners 20] [--postgres | --postgres-url URL]
    .venv/bin/python bench/class_cpu.py --against ../main --rounds 4   # A/B, interleaved
    .venv/bin/python bench/class_cpu.py --py-spy profile.svg   # pip install py-spy first
    (a name not ending in .svg gets py-spy's folded stacks, one line each)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]  # as in bench_class.py

import httpx  # noqa: E402
from bench_class import (  # noqa: E402  # run as a script: bench/ is on sys.path
    _CSRF,
    _SUBMISSION,
    REPO,
    SET_ID,
    _found,
    fresh_postgres,
    kind_of,
    private_postgres,
    serve,
    set_answers,
    stop,
)

KINDS = ("set page", "start", "resume", "question", "answer", "next", "results")


def cpu_clock(pid: int) -> float:
    """Seconds of CPU the process `pid` (all its threads) has used: Linux's per-process CPU
    clock (clock_getcpuclockid), exact to the nanosecond where /proc's ticks are 10 ms."""
    return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)


class Meter:
    """Server CPU per kind of request: the clock read as each request begins."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.seconds: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self._kind: str | None = None
        self._since = 0.0
        self.recording = True

    def begin(self, kind: str) -> None:
        now = cpu_clock(self.pid)
        if self._kind is not None and self.recording:
            self.seconds[self._kind] += now - self._since
            self.count[self._kind] += 1
        self._kind, self._since = kind, now

    def end(self) -> None:
        """Let the last request's work finish, and count it."""
        time.sleep(0.05)
        self.begin("")
        self._kind = None


def one_learner(url: str, meter: Meter, answers: list[tuple[str, str]]) -> None:
    """The flow of bench_class.take_the_set, serially, every question wrong then right."""
    with httpx.Client(base_url=url, timeout=30) as client:

        def send(kind: str, method: str, path: str, **form: object) -> httpx.Response:
            meter.begin(kind)
            response = client.get(path) if method == "GET" else client.post(path, data=form)
            if response.status_code not in (200, 303):
                raise SystemExit(f"{kind} {path}: {response.status_code}\n{response.text[:2000]}")
            return response

        page = send("set page", "GET", f"/sets/{SET_ID}")
        started = send(
            "start", "POST", f"/sets/{SET_ID}/start", csrf_token=_found(_CSRF, page.text)
        )
        base = started.headers["location"]
        question = send("question", "GET", send("resume", "GET", base).headers["location"])
        for number, (right, wrong) in enumerate(answers, start=1):
            for choice in (wrong, right):
                csrf, token = _found(_CSRF, question.text), _found(_SUBMISSION, question.text)
                sent = send(
                    "answer",
                    "POST",
                    f"{base}/q/{number}/answer",
                    csrf_token=csrf,
                    choice=choice,
                    submission=token,
                )
                question = send("question", "GET", sent.headers["location"])
            moved = send("next", "POST", f"{base}/next", csrf_token=_found(_CSRF, question.text))
            question = moved
            while question.status_code == 303:  # the next question or the results
                location = question.headers["location"]
                question = send(kind_of(location), "GET", location)


def measure(
    args: argparse.Namespace, database_url: str, folder: Path, root: Path, meter: Meter
) -> None:
    """Serve from the checkout `root`, warm it up, then send args.learners through, metered."""
    python = str(root / ".venv" / "bin" / "python") if root != REPO else sys.executable
    answers = set_answers()
    process, url = serve(database_url, 1, folder, root, python)
    spy = None
    try:
        meter.pid, meter.recording = process.pid, False
        for _ in range(args.warm_up):
            one_learner(url, meter, answers)
        if args.py_spy:
            found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            command = [found, "record", "-p", str(process.pid), "-o", args.py_spy, "-r", "250"]
            if not args.py_spy.endswith(".svg"):  # folded stacks, one a line, to read
                command += ["-f", "raw"]
            spy = subprocess.Popen(command, stdout=subprocess.DEVNULL)
            time.sleep(1)
        meter.end()
        meter.recording = True
        for _ in range(args.learners):
            one_learner(url, meter, answers)
        meter.end()
    finally:
        if spy is not None:
            spy.send_signal(2)  # py-spy writes its file on SIGINT
            spy.wait(timeout=60)
        stop(process)


def main() -> int:
    """Serve, send the learners through one by one, print CPU ms per request by kind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=20, help="per round and checkout")
    parser.add_argument("--warm-up", type=int, default=2, help="learners not counted")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", type=Path, help="another checkout (with its .venv): A/B")
    parser.add_argument("--postgres-url", help="a server to make the databases on")
    parser.add_argument("--postgres", action="store_true", help="a private PostgreSQL server")
    parser.add_argument("--py-spy", metavar="FILE", help="record the server with py-spy")
    args = parser.parse_args()
    roots = {"this": REPO} | ({"against": args.against.resolve()} if args.against else {})
    meters = {name: Meter(0) for name in roots}
    load = os.getloadavg()[0]
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
        server_url = args.postgres_url
        if args.postgres and not server_url:
            server_url = stack.enter_context(private_postgres())
        for turn in range(args.rounds):  # interleaved: a busy spell of the host hits both
            for name, root in roots.items() if turn % 2 == 0 else reversed(roots.items()):
                folder = Path(scratch)
                database_url = (
                    fresh_postgres(server_url)
                    if server_url
                    else f"sqlite:///{folder / f'{name}-{turn}.db'}"
                )
                measure(args, database_url, folder, root, meters[name])
    print(
        f"{'postgresql' if server_url else 'sqlite'}, 1 process, {args.rounds} x {args.learners} "
        f"learners one by one per checkout; load average before {load:.1f}, after "
        f"{os.getloadavg()[0]:.1f}"
    )
    names = list(roots)
    print(f"{'request':<10}{'count':>7}" + "".join(f"{n + ' ms':>14}" for n in names))
    for kind in [*KINDS, "all"]:
        row = []
        for name in names:
            meter = meters[name]
            seconds = sum(meter.seconds.values()) if kind == "all" else meter.seconds[kind]
            count = sum(meter.count.values()) if kind == "all" else meter.count[kind]
            row.append(1000 * seconds / count if count else float("nan"))
        count = (
            sum(meters[names[0]].count.values()) if kind == "all" else meters[names[0]].count[kind]
        )
        print(f"{kind:<10}{count:>7}" + "".join(f"{value:>14.2f}" for value in row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

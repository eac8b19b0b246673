"""How verify packs its work onto the executor's slots, handing results back in course order.

Taken in course order, `jobs` at a time, a from-scratch verify wasted its slots three ways:
the labs' steps ran one at a time before the items, the proofs waited for the last item, and
a long item late in the course (a torch.compile item, a hang) ran alone at the end while the
other slots idled. So everything goes into one queue, the costliest first (longest processing
time first: the tail is a short item), and an item whose key says the snippet hangs goes to a
lane of its own: its ranks sit blocked until the time limit, using no CPU, so it runs beside
the `jobs` busy runs on a spare slot (command.py starts the executor with jobs + SPARE_SLOTS)
instead of holding a busy one idle. So does an item whose snippet sleeps for seconds (a rank kept
away from a collective until a group or barrier timeout fires): its runs mostly wait too. With
jobs <= 1 the work runs one piece after another, in
order, as before.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

Done = TypeVar("Done")

# Slots for the runs expected to wait blocked at their time limit (hang keys). Their ranks use
# no CPU, so several wait at once: with one lane the course's hang keys (limits of 3-20 s, about
# 100 s in all) queued behind each other and that lane, not the busy slots, set the wall time.
SPARE_SLOTS = 4
# A rough price of one run in slot-seconds, for ordering only: measured on 2 loaded cores, a
# 2-rank gloo run of a shipped item took about 0.4 s, one that calls torch.compile about 3 s.
RUN_S = 0.4
RANK_S = 0.1
COMPILE_S = 3.0
# A snippet that sleeps this long a run mostly waits: a 2-rank run's CPU is ~0.15 s (the course's
# two, rank 1 asleep 6 or 8 s until rank 0's timeout fires, held a busy slot ~100 s per verify).
SLEEP_WAITS_S = 1.0


@dataclass(frozen=True)
class Work(Generic[Done]):
    """A piece of verify's work: what to do, its expected cost, and whether it mostly waits."""

    do: Callable[[], Done]
    cost_s: float = 0.0
    waits: bool = False  # its key says the snippet hangs: blocked, not busy, until its limit


def run_cost(request_code: str, nproc: int) -> float:
    """The expected slot-seconds of one run of a snippet."""
    cost = RUN_S + RANK_S * nproc + sleeps_s(request_code)
    if "torch.compile" in request_code:
        cost += COMPILE_S
    return cost


def sleeps_s(code: str) -> float:
    """The seconds the snippet's `time.sleep(N)` calls with a literal N add up to (0 when it
    has none or does not parse): each run waits at least the longest, asleep."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return 0.0
    seconds = 0.0
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        called = node.func
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        value = getattr(node.args[0], "value", None)  # a literal (ast.Constant), else None
        if name == "sleep" and isinstance(value, int | float) and not isinstance(value, bool):
            seconds += float(value)
    return seconds


def mostly_waits(code: str, hangs: bool) -> bool:
    """Whether a snippet's runs mostly wait rather than compute: its key says it hangs, or it
    sleeps SLEEP_WAITS_S or more."""
    return hangs or sleeps_s(code) >= SLEEP_WAITS_S


def snippet_cost(
    code: str, fixed: str | None, nproc: int, repeats: int, timeout_s: float, hangs: bool
) -> float:
    """The expected slot-seconds of verifying a snippet: `repeats` runs (one, held to the time
    limit, when it hangs) and as many of its fixed code."""
    cost = timeout_s + run_cost(code, nproc) if hangs else repeats * run_cost(code, nproc)
    if fixed is not None:
        cost += repeats * run_cost(fixed, nproc)
    return cost


def in_order(work: Sequence[Work[Done]], jobs: int) -> Iterator[Done]:
    """Do every piece of work, `jobs` busy pieces at a time (and waiting ones on their own
    lane), the costliest first; yield the results in the order given."""
    if jobs <= 1:
        for piece in work:
            yield piece.do()
        return
    # The HTTP client opens a connection per call, so threads may share it.
    busy = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="verify")
    lane = ThreadPoolExecutor(max_workers=SPARE_SLOTS, thread_name_prefix="verify-waits")
    try:
        futures: dict[int, Future[Done]] = {}
        # sorted() is stable: equal costs keep the course order.
        for index in sorted(range(len(work)), key=lambda index: -work[index].cost_s):
            piece = work[index]
            futures[index] = (lane if piece.waits else busy).submit(piece.do)
        for index in range(len(work)):
            yield futures[index].result()
    finally:
        for pool in (busy, lane):
            pool.shutdown(wait=True, cancel_futures=True)

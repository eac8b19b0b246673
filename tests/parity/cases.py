"""The parity cases: which snippet, how it is launched, and what in its output is legitimately
random (and so masked, or checked as a property rather than compared as text)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar

from executor.settings import ExecutorSettings
from tests.parity.launch import Observed, exception_line

SNIPPETS = Path(__file__).parent / "snippets"
AFTER_PEER_FAILURE = "ends after a peer failed"

# Masks for every case: what depends on where and when a run happens, never on what it does.
COMMON_MASKS: tuple[tuple[str, str], ...] = (
    # The snippet's folder (a temporary directory for torchrun, /tmp in the sandbox).
    (r"(?:/[\w.+-]+)*/snippet\.py", "<dir>/snippet.py"),
    # Where Python and its packages are: the host's paths for torchrun, /opt/ranklab/... in the
    # sandbox (executor/neutral_paths.py).
    (r"(?:/[\w.+-]+)*/(site-packages|lib/python3\.\d+)/", r"<python>/\1/"),
    # Peer addresses in gloo's connection errors.
    (r"\[(?:127\.0\.0\.1|::1|localhost)\]:\d+", "[<addr>]:<port>"),
    (r"0x[0-9a-fA-F]+", "0x<addr>"),
)
# gloo's words for a peer that left mid-collective: "Connection closed by peer" when its socket
# closed cleanly, "Read error …: Connection reset by peer" when it closed with data unread (the
# kernel then resets it). Which one a run gets is timing, under torchrun as in the executor.
PEER_GONE = (
    r"\[[^\]]*/pair\.cc:\d+\] (?:Connection closed by peer \[<addr>\]:<port>\.|Read error "
    r"\[<addr>\]:<port>: Connection reset by peer\.) This is typically caused by a remote worker "
    r"(?:crashing|hanging or bugs in the application)\.",
    "<gloo: the peer went away>.",
)
# Values drawn from an unseeded generator, printed as `NAME values: [...]`.
RANDOM_VALUES = (r"(?m)^(\w+) values: .*$", r"\1 values: <random>")


@dataclass(frozen=True)
class Case:
    """One snippet, one launch.

    runs: 2 when the output legitimately varies per run: each launcher runs it twice and the
        suite checks that it varies (or not) under the executor as under the reference.
    masks: (regex, replacement) for output that legitimately differs per rank or per run.
    sort_lines: the order of lines within a rank's stdout is not deterministic (several
        processes share it).
    after_peer_failure: ranks whose end races with a peer's failure: whether gloo's error or
        the launcher's stop gets there first is legitimately random.
    stderr_lines: a regex; stderr lines matching it are compared too (masked).
    deadline_s: how long the reference launch may run before its live ranks count as hung.
    timeout_s: the executor's timeout for the same snippet.
    """

    name: str
    snippet: str
    nproc: int = 2
    launcher: Literal["torchrun", "python"] = "torchrun"
    runs: int = 1
    masks: tuple[tuple[str, str], ...] = ()
    sort_lines: bool = False
    after_peer_failure: frozenset[int] = field(default_factory=frozenset)
    stderr_lines: str | None = None
    deadline_s: float = 90.0
    timeout_s: float = 30.0

    @cached_property
    def source(self) -> str:
        """The snippet's code, as both launchers run it."""
        return (SNIPPETS / self.snippet).read_text()

    def mask(self, text: str) -> str:
        """Hide what legitimately differs."""
        for pattern, replacement in (*COMMON_MASKS, *self.masks):
            text = re.sub(pattern, replacement, text)
        return text

    def normalise(self, observed: Observed) -> list[dict[str, Any]]:
        """Each rank's outcome with what is legitimately random taken out: what must be equal."""
        views: list[dict[str, Any]] = []
        for rank in observed.ranks:
            status = rank.status
            racing = status == "stopped" or status.startswith("raises ")
            if rank.rank in self.after_peer_failure and racing:
                status = AFTER_PEER_FAILURE
            lines = self.mask(rank.stdout).splitlines()
            view: dict[str, Any] = {
                "rank": rank.rank,
                "status": status,
                "stdout": sorted(lines) if self.sort_lines else lines,
            }
            if self.stderr_lines is not None:
                view["stderr"] = [
                    self.mask(line)
                    for line in rank.stderr.splitlines()
                    if re.search(self.stderr_lines, line)
                ]
            views.append(view)
        return views

    def exception_lines(self, observed: Observed) -> dict[int, str | None]:
        """The last traceback line (masked) of each rank that raised by itself."""
        return {
            rank.rank: self.mask(exception_line(rank.stderr) or "")
            for rank in observed.ranks
            if rank.status.startswith("raises") and rank.rank not in self.after_peer_failure
        }


def varying_lines(case: Case, runs: list[Observed]) -> list[list[str]]:
    """Per rank, the stdout lines (shown masked) that differ between runs before masking."""
    per_rank: list[list[str]] = []
    for index, rank in enumerate(runs[0].ranks):
        outputs = [run.ranks[index].stdout.splitlines() for run in runs]
        lines = rank.stdout.splitlines()
        per_rank.append(
            [
                case.mask(line)
                for position, line in enumerate(lines)
                if len({tuple(out[position : position + 1]) for out in outputs}) > 1
            ]
        )
    return per_rank


# The randomness cases: the ones reseeding after fork exists for.
RANDOMNESS = ("unseeded_draws", "linear_init_ddp", "dropout_ddp")
ENVIRONMENT = "environment"
# The executor's ranks get their hash secret from a warm parent: the main zygote or one of its
# `siblings`. With more ranks than parents, two ranks must share one (the pinned difference).
CROWDED_HASH_ORDER = "hash_order_more_ranks_than_warm_parents"
WARM_PARENTS = 1 + ExecutorSettings().siblings
# A rank with no SIGTERM handler, stopped after its peer failed: its exit code is compared too.
SIGTERM_DEFAULT = "sigterm_default"
HASH_ORDER_MASK = (r"(?m)^order: .*$", "order: <hash order>")

CASES: tuple[Case, ...] = (
    # Randomness: differs per rank and per run under torchrun.
    Case("unseeded_draws", "unseeded_draws.py", runs=2, masks=(RANDOM_VALUES,)),
    Case("seeded_draws", "seeded_draws.py"),
    Case("linear_init_ddp", "linear_init_ddp.py"),
    Case("dropout_ddp", "dropout_ddp.py"),
    Case("hash_order", "hash_order.py", masks=(HASH_ORDER_MASK,)),
    Case(
        CROWDED_HASH_ORDER,
        "hash_order.py",
        nproc=WARM_PARENTS + 1,
        masks=(HASH_ORDER_MASK,),
        timeout_s=15.0,
    ),
    # What a rank starts with (the environment has its own test, see test_parity.py).
    Case(ENVIRONMENT, "environment.py", runs=2),
    Case("threads_two_ranks", "threads.py", nproc=2),
    Case("threads_one_rank", "threads.py", nproc=1),
    Case("threads_python", "threads.py", launcher="python"),
    Case("file_source", "file_source.py"),
    Case("file_source_python", "file_source.py", launcher="python"),
    Case("atexit_handlers", "atexit_handlers.py"),
    Case("warnings_shown", "warnings_shown.py", stderr_lines=r"Warning"),
    # Processes the snippet starts itself.
    # Its two spawned workers import torch cold (~15-25 s under the executor on a busy 2 cores).
    Case(
        "mp_spawn_tutorial",
        "mp_spawn_tutorial.py",
        launcher="python",
        sort_lines=True,
        timeout_s=60.0,
    ),
    Case("mp_child_in_rank", "mp_child_in_rank.py"),
    # Every collective on gloo.
    Case("all_reduce_ops", "all_reduce_ops.py"),
    Case("broadcast_src1", "broadcast_src1.py"),
    Case("all_gather", "all_gather.py", stderr_lines=r"Warning"),
    Case("reduce_non_dst", "reduce_non_dst.py", nproc=3),
    Case("reduce_scatter", "reduce_scatter.py", stderr_lines=r"Warning"),
    Case("all_to_all", "all_to_all.py", nproc=3),
    Case("object_collectives", "object_collectives.py"),
    # Data and training patterns.
    Case("sampler_shards", "sampler_shards.py"),
    Case("no_sync_accumulation", "no_sync_accumulation.py"),
    Case("join_uneven", "join_uneven.py"),
    # Failures, hangs and slowness.
    Case("exception_one_rank", "exception_one_rank.py"),
    Case("exception_peer_waiting", "exception_peer_waiting.py", after_peer_failure=frozenset({0})),
    Case("sys_exit_codes", "sys_exit_codes.py"),
    Case("deadlock", "deadlock.py", deadline_s=20.0, timeout_s=4.0),
    Case("barrier_one_rank", "barrier_one_rank.py", masks=(PEER_GONE,)),
    Case("slow_rank", "slow_rank.py"),
    Case("sigkill_rank", "sigkill_rank.py", after_peer_failure=frozenset({0})),
    Case("own_tcpstore", "own_tcpstore.py", deadline_s=60.0),
    # How the launcher stops the other ranks after a failure (SIGTERM, then SIGKILL).
    Case("sigterm_handler", "sigterm_handler.py"),
    Case(SIGTERM_DEFAULT, "sigterm_default.py"),
    Case("master_addr", "master_addr.py"),
)
BY_NAME = {case.name: case for case in CASES}

USES = "parity_cases"
Test = TypeVar("Test")


def uses(*names: str) -> Callable[[Test], Test]:
    """Declare the reference launches a test that is not parametrized by case compares with."""
    unknown = set(names) - set(BY_NAME)
    assert not unknown, f"no such parity cases: {unknown}"

    def declare(test: Test) -> Test:
        setattr(test, USES, names)
        return test

    return declare

"""Verify's early stop of a hung run (executor/hangstop.py): when the executor looks, what it
counts as blocked, and that a run which does not ask for it still waits out its limit.

The judgement of whole runs against claims, with real gloo ranks, is in
tests/verification/test_hang_stop.py.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Iterator

import pytest

from executor import hangstop
from executor.contract import RunRequest, RunResult, RunStatus
from executor.hangstop import ThreadSample
from executor.runner import Executor
from executor.settings import ExecutorSettings

DEADLOCK = (
    "import torch, torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "if dist.get_rank() == 0:\n"
    "    dist.all_reduce(torch.ones(1))\n"
    "else:\n"
    "    dist.barrier()\n"
)

# Each of these can end a wait in a collective before the run's limit, or hide how.
REFUSED = {
    "init_process_group(timeout=...)": (
        "import datetime, torch.distributed as dist\n"
        "dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=2))\n"
    ),
    "a timedelta passed by position": (
        "from datetime import timedelta as td\nimport torch.distributed as dist\n"
        "dist.init_process_group('gloo', None, td(seconds=2))\n"
    ),
    "new_group(timeout=...)": "g = dist.new_group([0, 1], timeout=t)\n",
    "monitored_barrier with a timeout": "dist.monitored_barrier(timeout=t)\n",
    "store.wait with a timeout": "store.wait(['ready'], timedelta(seconds=2))\n",
    "store.set_timeout": "store.set_timeout(t)\n",
    "an environment variable naming a timeout": "os.environ['TORCH_X_TIMEOUT_SEC'] = '1'\n",
    "an alarm": "import signal\nsignal.alarm(2)\n",
    "a dump that exits": "import faulthandler\nfaulthandler.dump_traceback_later(2, exit=True)\n",
    "code built at run time": "exec(open('other.py').read())\n",
    "names built at run time": "wait = getattr(store, 'wa' + 'it')\n",
    "a module's names by string": (
        "import datetime\nspan = vars(datetime)['time' + 'delta'](seconds=2)\n"
    ),
    "an object's dict": "dist.distributed_c10d.__dict__['default_pg_' + 'time' + 'out'] = t\n",
    "seconds by position to a binding": (
        "work = dist.all_reduce(torch.ones(1), async_op=True)\nwork.wait(2.0)\n"
    ),
    "a store's seconds by position": "store = dist.TCPStore('localhost', 29500, 2, True, 2.0)\n",
    "options unpacked": "dist.init_process_group('gloo', **options)\n",
    "an alias": "make = dist.new_group\ngroup = make([0, 1], t)\n",
    "an import alias": "from torch.distributed import new_group as make\n",
    "a default rewritten": "dist.new_group.__kwdefaults__ = {}\n",
    "a timeout in fullwidth letters (Python reads names as NFKC)": (
        "import datetime, torch.distributed as dist\n"
        "dist.init_process_group('gloo', ｔｉｍｅｏｕｔ=datetime.ｔｉｍｅｄｅｌｔａ(seconds=2))\n"
    ),
}


@pytest.mark.parametrize("code", REFUSED.values(), ids=REFUSED.keys())
def test_the_executor_declines_to_look_at_a_snippet_that_can_set_a_deadline(code: str) -> None:
    request = {"code": code, "stop_when_stuck": True, "launcher": "torchrun"}
    reason = hangstop.refusal(request, "gloo")
    assert reason is not None and "it may end a wait by itself" in reason


def fullwidth(word: str) -> str:
    """The word in fullwidth letters (ｔｉｍｅｏｕｔ), which Python reads as ASCII (NFKC)."""
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalpha() else c for c in word)


def bold(word: str) -> str:
    """The word in mathematical bold letters (𝐭𝐢𝐦𝐞𝐨𝐮𝐭), which Python reads as ASCII too."""
    return "".join(chr(0x1D41A + ord(c) - ord("a")) if "a" <= c <= "z" else c for c in word)


@pytest.mark.parametrize("word", hangstop.REFUSING_WORDS)
def test_a_word_is_found_however_unicode_spells_it_since_python_reads_names_as_nfkc(
    word: str,
) -> None:
    found = hangstop.refusing_word(f"x = dist.{word}\n")
    assert found is not None
    for spelled in (fullwidth(word), bold(word), fullwidth(word.upper())):
        assert spelled.isascii() is False
        assert hangstop.refusing_word(f"x = dist.{spelled}\n") == found  # a name
        assert hangstop.refusing_word(f"{spelled}(x)\n") == found  # a call
        assert hangstop.refusing_word(f"x = {spelled!r}\n") == found  # a string


def test_a_timeout_keyword_is_refused_by_the_parsers_reading_whatever_the_words_saw() -> None:
    """The parser gives keyword names in their NFKC form: the deadline check sees the
    keyword even where a spelling got past the word filter."""
    code = f"dist.init_process_group('gloo', {fullwidth('timeout')}=t)\n"
    assert hangstop._hidden_deadline(ast.parse(code)) == "init_process_group(timeout=…)"
    assert hangstop._hidden_deadline(ast.parse("dist.new_group([0, 1], timeout=t)\n"))
    assert hangstop._hidden_deadline(ast.parse(DEADLOCK)) is None


def test_what_the_executor_looks_at_and_what_it_never_looks_at() -> None:
    asked = {"code": DEADLOCK, "stop_when_stuck": True, "launcher": "torchrun"}
    assert hangstop.refusal(asked, "gloo") is None
    # a comment is not code
    commented = {**asked, "code": DEADLOCK + "# no timeout, no signal: it waits forever\n"}
    assert hangstop.refusal(commented, "gloo") is None
    assert hangstop.refusal({**asked, "stop_when_stuck": False}, "gloo") == "not asked"
    assert hangstop.refusal({**asked, "launcher": "python"}, "gloo") is not None
    assert hangstop.refusal(asked, "nccl") is not None
    assert hangstop.refusal({**asked, "code": "print('unclosed\n"}, "gloo") is not None


MAIN, LOOP = 100, 101  # a rank's main thread (pid == tid) and gloo's event loop
WINDOW_NS = int(hangstop.WINDOW_S * 1e9)


def samples(main: tuple[int, int, str], loop: tuple[int, int, str]) -> dict[int, ThreadSample]:
    return {MAIN: ThreadSample(*main), LOOP: ThreadSample(*loop)}


def test_a_rank_counts_as_blocked_only_if_its_main_thread_never_ran_and_nothing_waits() -> None:
    before = samples((5_000_000, 40, "S"), (1_000_000, 900, "S"))
    # the event loop ticked (about 1.5 ms of CPU a second); the main thread never ran: blocked
    blocked = samples((5_000_000, 40, "S"), (1_700_000, 950, "R"))
    assert hangstop.stirred(MAIN, before, blocked, WINDOW_NS) is None
    cases = {
        "its main thread ran": samples((5_100_000, 41, "S"), (1_700_000, 950, "S")),
        "its main thread waits for a CPU": samples((5_000_000, 40, "R"), (1_700_000, 950, "S")),
        "a thread starved the whole window": samples((5_000_000, 40, "S"), (1_000_000, 900, "R")),
        "its threads worked": samples((5_000_000, 40, "S"), (30_000_000, 950, "S")),
        "it ended": samples((5_000_000, 40, "Z"), (1_700_000, 950, "S")),
    }
    for name, after in cases.items():
        assert hangstop.stirred(MAIN, before, after, WINDOW_NS) is not None, name
    assert hangstop.stirred(MAIN, before, {**blocked, 102: ThreadSample(0, 1, "S")}, WINDOW_NS)
    assert hangstop.stirred(MAIN, before, None, WINDOW_NS) is not None


def run(runner: Executor, code: str, timeout_s: float, stop_when_stuck: bool) -> RunResult:
    request = RunRequest(
        code=code, nproc=2, timeout_s=timeout_s, use_cache=False, stop_when_stuck=stop_when_stuck
    )
    return asyncio.run(runner.run(request))


@pytest.mark.executor
def test_a_deadlock_is_stopped_early_only_when_the_request_asks(executor: Executor) -> None:
    asked = run(executor, DEADLOCK, timeout_s=8, stop_when_stuck=True)
    assert asked.status is RunStatus.TIMEOUT and asked.stopped_when_stuck
    assert asked.duration_ms < 8000  # before the limit: that is what stopping early means
    first, second = (rank.stuck for rank in asked.ranks)
    assert first is not None and (first.line, first.call) == (4, "dist.all_reduce")
    assert second is not None and (second.line, second.call) == (6, "dist.barrier")
    # Learners' runs (Run it, labs) do not ask: the same deadlock waits out its limit.
    learner = run(executor, DEADLOCK, timeout_s=3, stop_when_stuck=False)
    assert learner.status is RunStatus.TIMEOUT and not learner.stopped_when_stuck
    assert learner.duration_ms >= 3000


@pytest.fixture(scope="module")
def trusted() -> Iterator[Executor]:
    runner = Executor(ExecutorSettings(trusted=True, max_concurrent_runs=1, siblings=0))
    runner.pool.start()
    yield runner
    runner.close()


@pytest.mark.executor
def test_a_trusted_run_is_never_stopped_early(trusted: Executor) -> None:
    # No pid namespace: an orphan of a rank's would escape the look's check for strays.
    asked = run(trusted, DEADLOCK, timeout_s=3, stop_when_stuck=True)
    assert asked.status is RunStatus.TIMEOUT and not asked.stopped_when_stuck
    assert asked.duration_ms >= 3000

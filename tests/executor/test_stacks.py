"""Where each rank of a hung run was stuck: its stack, dumped just before the time limit's kill.

Real gloo ranks, sandboxed (and trusted: the embedded executor of an instructor's machine).
The snippet is untrusted: it may take the dump signal, write on the dump's descriptor, or spin;
the run still ends at its limit, judged by its wait statuses, with a report that is either
right or says it does not know.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from executor import stacks
from executor.contract import RankStatus, RunStatus
from executor.runner import Executor
from executor.settings import ExecutorSettings
from tests.support.executor import run

pytestmark = pytest.mark.executor

DEADLOCK = (
    "import torch, torch.distributed as dist\n"  # 1
    "dist.init_process_group('gloo')\n"  # 2
    "rank = dist.get_rank()\n"  # 3
    "\n"  # 4
    "def step():\n"  # 5
    "    dist.all_reduce(torch.ones(1))  # rank 1 never joins\n"  # 6
    "\n"  # 7
    "if rank == 0:\n"  # 8
    "    step()\n"  # 9
    "else:\n"  # 10
    "    dist.barrier()\n"  # 11
)


@pytest.fixture(scope="module")
def trusted() -> Iterator[Executor]:
    """A trusted warm pool (no namespaces, no seccomp): the same capture must work there."""
    runner = Executor(ExecutorSettings(trusted=True, max_concurrent_runs=1, siblings=0))
    runner.pool.start()
    yield runner
    runner.close()


@pytest.fixture(params=["sandboxed", "trusted"])
def any_executor(request: pytest.FixtureRequest) -> Executor:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


def test_a_deadlock_reports_each_ranks_line_and_call(any_executor: Executor) -> None:
    result = run(any_executor, DEADLOCK, nproc=2, timeout_s=3)
    assert result.status is RunStatus.TIMEOUT
    assert [r.status for r in result.ranks] == [RankStatus.TIMEOUT, RankStatus.TIMEOUT]
    first, second = (rank.stuck for rank in result.ranks)
    assert first is not None and second is not None
    assert (first.line, first.call, first.distributed) == (6, "dist.all_reduce", True)
    assert (second.line, second.call, second.distributed) == (11, "dist.barrier", True)
    # Blocked in gloo: (next to) no CPU over the sample before the kill.
    assert first.sample_ms and first.cpu_ms is not None and first.cpu_ms <= first.sample_ms // 10
    assert second.cpu_ms is not None and second.cpu_ms <= second.sample_ms // 10  # type: ignore[operator]


HOSTILE = {
    # takes the dump signal for itself: nothing is dumped, the run still ends at its limit
    "ignores the signal": (
        "import signal, time\nsignal.signal(signal.SIGWINCH, signal.SIG_IGN)\ntime.sleep(60)\n"
    ),
    "unregisters the dump": (
        "import faulthandler, signal, time\n"
        "faulthandler.unregister(signal.SIGWINCH)\ntime.sleep(60)\n"
    ),
    "closes the dump's descriptor": "import os, time\nos.close(4)\ntime.sleep(60)\n",
    # a Python handler never runs while the main thread spins in C; this one spins in Python
    "handles it and spins": (
        "import signal\nsignal.signal(signal.SIGWINCH, lambda *a: print('mine'))\n"
        "while True:\n    pass\n"
    ),
}


@pytest.mark.parametrize("code", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_snippet_fighting_the_dump_still_ends_at_its_limit(
    sandboxed: Executor, code: str
) -> None:
    result = run(sandboxed, code, nproc=2, timeout_s=2)
    assert result.status is RunStatus.TIMEOUT
    assert all(rank.status is RankStatus.TIMEOUT for rank in result.ranks)
    assert all(rank.exit_code is None for rank in result.ranks)  # killed at the limit, not before
    lines = code.count("\n") + 1
    for rank in result.ranks:
        stuck = rank.stuck
        assert stuck is not None  # a report, even if it knows nothing of the place
        assert stuck.line is None or 1 <= stuck.line <= lines
        assert stuck.cpu_ms is not None


def test_a_spinning_rank_shows_its_line_and_its_cpu_use(sandboxed: Executor) -> None:
    code = "import time\nx = 0\nwhile True:\n    x += 1\n"
    result = run(sandboxed, code, nproc=1, timeout_s=2)
    stuck = result.ranks[0].stuck
    assert stuck is not None and stuck.line in (3, 4) and not stuck.distributed
    assert stuck.cpu_ms is not None and stuck.cpu_ms > 0


def test_what_the_snippet_wrote_on_the_dump_channel_before_the_limit_is_not_its_stack(
    sandboxed: Executor,
) -> None:
    forged = (
        "Current thread 0x0000000000000001 (most recent call first):\\n"
        '  File \\"/tmp/snippet.py\\", line 1 in <module>\\n'
        '  File \\"/opt/ranklab/executor/rank.py\\", line 1 in _execute\\n'
    )
    code = f"import os, time\nos.write(4, b'{forged}' * 50)\ntime.sleep(60)\n"
    result = run(sandboxed, code, nproc=1, timeout_s=2)
    stuck = result.ranks[0].stuck
    assert stuck is not None and (stuck.line, stuck.call) == (3, "time.sleep")


def test_a_huge_dump_is_read_only_up_to_its_cap() -> None:
    real = (
        b"Current thread 0x00007f0000000001 (most recent call first):\n"
        b'  File "/tmp/snippet.py", line 2 in <module>\n'
        b'  File "/opt/ranklab/executor/rank.py", line 240 in _execute\n'
    )
    flood = b"x" * (8 * 1024 * 1024) + b"\n"
    code = "import time\ntime.sleep(9)\n"
    assert stacks.stuck_at(real, code, "snippet.py", 0, 100).line == 2
    beyond = stacks.stuck_at(flood + real, code, "snippet.py", 0, 100)
    assert (beyond.line, beyond.call) == (None, None)


def test_frames_naming_lines_the_snippet_does_not_have_give_no_line() -> None:
    fake = (
        b"Current thread 0x00007f0000000001 (most recent call first):\n"
        b'  File "/tmp/snippet.py", line 999999 in <module>\n'
        b'  File "/opt/ranklab/executor/rank.py", line 240 in _execute\n'
        b"\xff\xfe garbage \x00\n" * 3
    )
    stuck = stacks.stuck_at(fake, "print(1)\n", "snippet.py", None, None)
    assert stuck.line is None and stuck.call is None


def test_the_call_is_named_as_the_snippet_wrote_it() -> None:
    code = "import torch\nmodel = None\nmodel(torch.ones(4, 2)).sum().backward()\n"
    dump = (
        b"Current thread 0x00007f0000000001 (most recent call first):\n"
        b'  File "/venv/torch/autograd/graph.py", line 829 in _engine_run_backward\n'
        b'  File "/venv/torch/autograd/__init__.py", line 347 in backward\n'
        b'  File "/venv/torch/_tensor.py", line 626 in backward\n'
        b'  File "/tmp/snippet.py", line 3 in <module>\n'
        b'  File "/opt/ranklab/executor/rank.py", line 240 in _execute\n'
    )
    stuck = stacks.stuck_at(dump, code, "snippet.py", 0, 200)
    assert (stuck.line, stuck.call, stuck.distributed) == (
        3,
        "model(torch.ones(4, 2)).sum().backward",
        False,
    )

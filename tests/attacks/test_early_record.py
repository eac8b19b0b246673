"""attack: a snippet writes a record on fd 3 that claims its end (exit 0) while it goes on:
printing for a while, then exiting 4. Once every rank's record is in, init reads the ranks'
exits in /proc to answer before their teardown (executor/exiting.py); a forged record must
not make the run answer early, nor let it claim the record's exit code.
expect: the kernel's exit code (4) and every line printed after the forged record, in a
sandboxed 2-rank run whose other rank ends honestly at once."""

from __future__ import annotations

import pytest

from executor.contract import RankStatus, RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor

EARLY = """
import json, os, sys, time
if int(os.environ["RANK"]) == 1:
    os.write(3, (json.dumps({"rank": 1, "exit_code": 0, "exception": None}) + "\\n").encode())
    for line in range(4):  # within init's window of reading exits (0.2 s)
        time.sleep(0.03)
        print("after", line, flush=True)
    os._exit(4)
print("honest")
"""


def test_a_record_forged_before_the_end_neither_ends_the_run_nor_names_its_code(
    sandboxed: Executor,
) -> None:
    result = run(sandboxed, EARLY, nproc=2)
    honest, forger = result.ranks
    assert (honest.status, honest.exit_code, honest.stdout) == (RankStatus.OK, 0, "honest\n")
    assert (forger.status, forger.exit_code) == (RankStatus.ERROR, 4)
    assert forger.stdout == "".join(f"after {line}\n" for line in range(4))
    assert result.status is RunStatus.ERROR

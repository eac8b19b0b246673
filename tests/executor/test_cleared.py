"""A run is answered once init says its namespace is cleared, before init itself has ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import Any

from executor.context import ZygoteContext
from executor.driver import RunDriver
from executor.limits import Limits, run_budget
from executor.wire import END_STORE_SIGNAL, RankPipes, StagedCell, status_line


def test_the_answer_comes_when_init_has_cleared_the_namespace_and_settle_awaits_its_end() -> None:
    # The cell's init stands in as a process that has not ended (its exit, the namespaces'
    # teardown, is what the answer no longer waits for); what it said is on its status pipe.
    # It ignores SIGPWR, as init handles it: every rank's record is in, so the driver asks init
    # to end the run's store process.
    init = subprocess.Popen(
        ["sleep", "600"], preexec_fn=lambda: signal.signal(END_STORE_SIGNAL, signal.SIG_IGN)
    )
    try:
        status_r, status_w = os.pipe()
        request_r, request_w = os.pipe()
        hello_r, hello_w = os.pipe()
        go_r, go_w = os.pipe()
        pipes = RankPipes.open(0)
        writes = pipes.write_ends()
        os.write(writes["stdout"], b"hello from rank 0\n")
        os.write(writes["result"], json.dumps({"rank": 0, "exit_code": 0}).encode() + b"\n")
        for message in ({"started": True}, {"rank": 0, "wait": 0}, {"cleared": True}):
            os.write(status_w, status_line(message))
        cell = StagedCell(init.pid, os.pidfd_open(init.pid), 29500, status_r, request_w,
                          hello_w, go_r, [pipes])  # fmt: skip
        limits = Limits()
        context = ZygoteContext(False, None, None, limits, "2.13", "3.11", reseed=False)
        driver = RunDriver(context, cell, None, None, stager_pid=os.getpid())
        events: list[dict[str, Any]] = []
        request = {"code": "print('hello from rank 0')", "nproc": 1, "timeout_s": 5.0}
        budget = run_budget(1, 5.0, limits, "gloo", 0)
        outcome = driver.execute(request, budget, events.append, time.monotonic() + 5.0)

        assert outcome["status"] == "ok", outcome
        assert outcome["ranks"][0]["stdout"] == "hello from rank 0\n"
        assert init.poll() is None  # answered while init still runs
        order = json.loads(os.read(request_r, 65536))  # init got its order
        assert order["code"] == request["code"]
        driver.settle()  # what the slot does before it stages the next run
        assert init.wait(5) == -9
        for fd in (status_w, request_r, hello_r, go_w):
            os.close(fd)
    finally:
        init.kill()
        init.wait()

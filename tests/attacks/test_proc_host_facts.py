"""Attack: read the host's facts through /proc, which a pid namespace does not hide (the
kernel's memory image, keyrings, timer and scheduler lists, hardware, the boot line and the
kernel's build configuration), and write kernel
settings through /proc/sys and /proc/sysrq-trigger. Must get: status ok, the masked entries
empty (or empty directories), the settings read-only (as runc's maskedPaths/readonlyPaths)."""

from __future__ import annotations

import json

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from executor.sandbox import PROC_MASKED, PROC_READ_ONLY
from tests.support.executor import run

pytestmark = pytest.mark.executor

ATTACK = """
import json, os
masked, read_only = %r, %r
seen = {}
for name in masked:
    path = "/proc/" + name
    try:
        if os.path.isdir(path):
            seen[name] = os.listdir(path)
        elif os.path.exists(path):
            with open(path, "rb") as entry:
                seen[name] = entry.read(4096).decode(errors="replace")
    except OSError as error:  # unreadable is not masked: the entry is still there
        seen[name] = repr(error)
mounts = {line.split()[1]: line.split()[3].split(",") for line in open("/proc/self/mounts")}
writable = {name: "ro" not in mounts.get("/proc/" + name, ["rw"])
            for name in read_only if os.path.exists("/proc/" + name)}
print(json.dumps({"seen": seen, "writable": writable,
                  "sys_readable": bool(open("/proc/sys/kernel/ostype").read())}))
"""


def test_host_facts_in_proc_are_masked_and_kernel_settings_read_only(
    sandboxed: Executor,
) -> None:
    result = run(sandboxed, ATTACK % (PROC_MASKED, PROC_READ_ONLY), nproc=1)
    assert result.status == RunStatus.OK, result
    report = json.loads(result.ranks[0].stdout)
    # Which entries exist depends on the kernel's configuration; the timer list always does.
    assert "timer_list" in report["seen"], report["seen"]
    assert "cmdline" in report["seen"], report["seen"]  # the host's boot line
    assert all(value in ("", []) for value in report["seen"].values()), report["seen"]
    assert "sys" in report["writable"]
    assert report["writable"] == dict.fromkeys(report["writable"], False)
    assert report["sys_readable"]

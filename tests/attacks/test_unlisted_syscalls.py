"""Attack: call the kernel's rarely used or newer interfaces from a snippet (keyrings, bpf,
io_uring, userfaultfd, perf events, kexec, and numbers no rule names), the surface a deny-list
leaves open as kernels grow. Must get: status ok, every call refused with EPERM (clone3 with
ENOSYS, so that glibc falls back to clone); the snippet itself goes on running."""

from __future__ import annotations

import json
import platform

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = [
    pytest.mark.executor,
    pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 system call numbers"),
]

ATTACK = """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
calls = {"add_key": 248, "keyctl": 250, "kexec_load": 246, "perf_event_open": 298,
         "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "unnamed_400": 400,
         "unnamed_1000": 1000, "clone3": 435}
errors = {}
for name, number in calls.items():
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), 0, 0, 0, 0, 0)
    errors[name] = 0 if result >= 0 else ctypes.get_errno()
print(json.dumps(errors))
"""


def test_calls_the_allow_list_does_not_name_are_refused(sandboxed: Executor) -> None:
    result = run(sandboxed, ATTACK, nproc=1)
    assert result.status == RunStatus.OK, result
    errors = json.loads(result.ranks[0].stdout)
    assert errors.pop("clone3") == 38  # ENOSYS
    assert errors == dict.fromkeys(errors, 1)  # EPERM, each one

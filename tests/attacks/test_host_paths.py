"""Attack: learn where the host keeps things from inside a run: the interpreter's install path
(under root's home) and the checkout with its virtualenv, through /proc/mounts,
sys.executable, /proc/self/exe, sys.path, module __file__s and the lines of a traceback raised
inside torch. Must get: status error (the snippet's own exception, raised on purpose), and no
host path anywhere in what it printed or in its traceback: only /opt/ranklab/... paths."""

from __future__ import annotations

import json
import os
import sys

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from executor.settings import PACKAGE_PARENT
from tests.support.executor import run

pytestmark = pytest.mark.executor

ATTACK = """
import json, os, sys, torch
print(json.dumps({
    "executable": sys.executable,
    "exe": os.readlink("/proc/self/exe"),
    "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix],
    "path": sys.path,
    "files": [torch.__file__, json.__file__, os.__file__],
    "mounts": open("/proc/mounts").read(),
}))
torch.nn.Linear(2, 2)(torch.zeros(3))  # raises inside torch's own Python code
"""


def host_paths() -> list[str]:
    """Where this machine keeps the interpreter, the virtualenv and the checkout."""
    paths = {os.path.realpath(sys.prefix), str(PACKAGE_PARENT), "/root"}
    base = os.path.realpath(sys.base_prefix)
    if not base.startswith("/usr"):  # /usr is shown to ranks as it is, on purpose
        paths.add(base)
    return sorted(paths)


def test_a_run_sees_python_and_its_packages_only_at_neutral_paths(sandboxed: Executor) -> None:
    result = run(sandboxed, ATTACK, nproc=1)
    assert result.status == RunStatus.ERROR, result
    rank = result.ranks[0]
    seen = json.loads(rank.stdout)
    assert seen["executable"] == seen["exe"] == "/opt/ranklab/venv/bin/python" or (
        sys.prefix == sys.base_prefix and seen["exe"].startswith("/opt/ranklab/python/")
    )
    assert seen["files"][0].startswith("/opt/ranklab/")
    assert "torch/nn/modules/linear.py" in rank.stderr  # the traceback has torch's frames
    printed = rank.stdout + rank.stderr
    leaks = [path for path in host_paths() if path in printed]
    assert not leaks, (leaks, printed)

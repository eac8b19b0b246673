"""Attack: find the host's paths and layout in what the kernel and the interpreter keep about a
run rather than in its files: /proc/self/mountinfo (a bind mount names its source's path, so
/root/.pyenv/... and the checkout's .venv showed), an editable install's finder (imported by
the warm parent, so in every rank's sys.meta_path, its MAPPING naming the checkout; its files
and direct_url.json readable in site-packages), and /proc/self/cgroup (ranklab/slot-<host
pid>-<slot>). On every rank, those forked by sibling warm parents too. Must get: status ok, no
host path anywhere in what it printed, no editable finder, and "/" as every cgroup path."""

from __future__ import annotations

import json

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.attacks.test_host_paths import host_paths
from tests.support.executor import run

pytestmark = pytest.mark.executor

ATTACK = """
import glob, json, sys
site = glob.glob("/opt/ranklab/*/lib/python*/site-packages") + glob.glob(
    "/opt/ranklab/venv/lib/python*/site-packages")
files = [path for directory in site for pattern in ("__editable__*", "*/direct_url.json",
         "__pycache__/__editable__*") for path in glob.glob(directory + "/" + pattern)]
print(json.dumps({
    "mountinfo": open("/proc/self/mountinfo").read(),
    "cgroup": open("/proc/self/cgroup").read().split(),
    "finders": [repr(finder) for finder in sys.meta_path + sys.path_hooks],
    "modules": [name for name in sys.modules if "editable" in name],
    "files": files,
    "site": site,
}))
"""


def test_mountinfo_finders_and_cgroups_name_no_host_path(sandboxed: Executor) -> None:
    result = run(sandboxed, ATTACK, nproc=3)  # three ranks: siblings fork some of them
    assert result.status == RunStatus.OK, result
    for rank in result.ranks:
        seen = json.loads(rank.stdout)
        assert seen["site"], seen  # the probe looked where the packages are
        leaks = [path for path in host_paths() if path in rank.stdout]
        assert not leaks, (leaks, seen["mountinfo"])
        assert not [finder for finder in seen["finders"] if "editable" in finder], seen
        assert (seen["modules"], seen["files"]) == ([], []), seen
        assert all(line.endswith(":/") for line in seen["cgroup"]), seen["cgroup"]

"""What a sandboxed rank can see and do, and how the executor fails closed."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from executor import identities
from executor.contract import RunRequest, RunStatus
from executor.runner import Executor
from executor.sandbox import GPU_SYSFS, make_plan, with_gpus
from executor.settings import PACKAGE_PARENT, ExecutorSettings
from tests.support.executor import run

pytestmark = pytest.mark.executor

PROBE = """
import json, os, socket
facts = {"uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(), "ppid": os.getppid()}
facts["interfaces"] = [name for _, name in socket.if_nameindex()]
facts["hostname"] = socket.gethostname()
facts["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
facts["tmp"] = os.listdir("/tmp")
facts["home_dirs"] = os.listdir("/root") if os.path.isdir("/root") else []
facts["repo"] = os.listdir(%(repo)r) if os.path.isdir(%(repo)r) else None
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines())
facts["seccomp"] = status["Seccomp"].strip()
facts["no_new_privs"] = status["NoNewPrivs"].strip()
facts["capabilities"] = status["CapEff"].strip()
try:
    open("/usr/ranklab-probe", "w")
    facts["root_writable"] = True
except OSError as error:
    facts["root_writable"] = type(error).__name__
try:
    socket.create_connection(("1.1.1.1", 53), timeout=1)
    facts["internet"] = True
except OSError as error:
    facts["internet"] = type(error).__name__
with open("/dev/null", "w") as sink:  # device nodes stay usable on the read-only /dev
    facts["dev_null"] = sink.write("x")
print(json.dumps(facts))
"""


def test_a_rank_runs_as_its_slot_s_uid_in_its_own_namespaces(sandboxed: Executor) -> None:
    result = run(sandboxed, PROBE % {"repo": str(PACKAGE_PARENT)}, nproc=1)
    assert result.status is RunStatus.OK, result
    facts = json.loads(result.ranks[0].stdout)
    # Its slot's own uid (identities.py), never a real user's and never root.
    assert identities.in_range(facts["uid"]) and facts["gid"] == facts["uid"]
    # Its parent is the run's init (pid 1 of a pid namespace of its own), or, for a rank forked
    # by a sibling warm parent (siblings.py), a process outside that namespace: pid 0.
    assert facts["ppid"] in {0, 1}
    # Only this run's processes: init, the rendezvous store it hosts (as torchrun's agent
    # does), and the rank itself.
    assert len(facts["processes"]) == 3 and {1, facts["pid"]} <= set(facts["processes"])
    assert facts["interfaces"] == ["lo"]
    assert (facts["seccomp"], facts["no_new_privs"]) == ("2", "1")  # filter mode, no way back
    assert int(facts["capabilities"], 16) == 0
    assert facts["hostname"] == "ranklab"
    assert facts["internet"] in {"OSError", "ConnectionRefusedError"}
    assert facts["root_writable"] in {"OSError", "PermissionError"}
    assert facts["dev_null"] == 1
    # A fresh private /tmp: the snippet and torchrun's error-file folder, nothing of the host's
    # (a virtualenv in a checkout under /tmp, where CI may clone, is at /opt/ranklab/venv).
    elastic = {name for name in facts["tmp"] if name.startswith("torchelastic_")}
    assert len(elastic) == 1
    assert set(facts["tmp"]) == {"snippet.py"} | elastic
    # Python and its packages are at neutral paths (executor/neutral_paths.py): nothing of root's
    # home, and not the checkout (its files, its database, its .venv) at all.
    assert facts["home_dirs"] == []
    assert facts["repo"] is None


def test_ranks_of_a_sandboxed_run_talk_over_their_own_loopback(sandboxed: Executor) -> None:
    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.tensor([float(dist.get_rank())])\n"
        "dist.broadcast(t, src=1)\n"
        "print(t.item())\n"
    )
    result = run(sandboxed, code, nproc=2)
    assert [r.stdout for r in result.ranks] == ["1.0\n", "1.0\n"]
    assert all(r.stderr == "" for r in result.ranks)  # no hostname warnings from c10d


def test_without_isolation_untrusted_code_is_refused(executor: Executor) -> None:
    settings = ExecutorSettings(
        warm=False, max_concurrent_runs=1, cgroup_root="/nonexistent-cgroup-root"
    )
    broken = Executor(settings)
    try:
        broken.pool.start()
        result = asyncio.run(broken.run(RunRequest(code="print('ran bare')", nproc=1)))
    finally:
        broken.close()
    assert result.status is RunStatus.REJECTED
    assert result.message is not None and "refusing to run untrusted code" in result.message
    assert result.ranks == []


def test_trusted_mode_runs_unsandboxed_only_when_asked(executor: Executor) -> None:
    settings = ExecutorSettings(trusted=True, warm=False, max_concurrent_runs=1)
    trusted = Executor(settings)
    try:
        trusted.pool.start()
        result = asyncio.run(trusted.run(RunRequest(code="import os; print(os.getuid())")))
    finally:
        trusted.close()
    assert result.status is RunStatus.OK
    assert result.ranks[0].stdout == "0\n"


def test_python_trees_under_tmp_are_bound_back_over_the_private_tmp(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout (and its .venv) under /tmp, as CI may use: the run's private /tmp covers it,
    # so the plan must name the venv to bind back, and only the outermost tree.
    site = tmp_path / "clone" / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "clone" / ".venv"))
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    plan = make_plan([], 65534, 65534, "/sys/fs/cgroup")
    assert str(tmp_path / "clone" / ".venv") in plan.under_tmp
    assert str(site) not in plan.under_tmp


def test_the_plan_is_an_allow_list_of_system_and_python_trees() -> None:
    plan = make_plan([], 65534, 65534, "/sys/fs/cgroup")
    trees = set(plan.exposed) | set(plan.under_tmp)
    python = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    # Every Python tree in use is reachable through a bound tree...
    assert all(any(p == t or p.startswith(t + "/") for t in trees) for p in python)
    # ...and nothing else: no home, no checkout around the venv, no /var, /etc, /sys or /opt.
    assert trees <= {"/usr", *python, *(t for t in trees if t.startswith("/tmp/"))}
    assert str(PACKAGE_PARENT) not in trees
    assert set(plan.devices) >= {"/dev/null", "/dev/urandom"}
    assert "/dev/shm" not in plan.devices  # a fresh tmpfs per run instead


def test_a_run_holding_gpus_gets_their_nodes_and_the_pci_view_nccl_reads() -> None:
    plan = make_plan([], 65534, 65534, "/sys/fs/cgroup")
    assert not any(device.startswith("/dev/nvidia") for device in plan.devices)
    assert plan.sysfs == ()  # a run without GPUs sees an empty /sys
    host = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1"}
    holding = with_gpus(plan, [1], exists=host.__contains__)
    assert holding.devices == (*plan.devices, "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1")
    assert holding.sysfs == tuple(path for path in GPU_SYSFS if os.path.isdir(path))
    assert (holding.exposed, holding.uid) == (plan.exposed, plan.uid)  # nothing else changes
    assert with_gpus(plan, []) == plan

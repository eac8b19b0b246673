"""The attack suite: each snippet in hostile/ must get the status its header names, harm nothing
on the host, and leave the executor serving the next run normally."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from executor import exiting, identities
from executor.contract import RankStatus, RunRequest, RunResult, RunStatus
from executor.runner import Executor
from executor.sandbox import PROC_MASKED, PROC_READ_ONLY, SYSTEM_TREES, make_plan
from executor.settings import PACKAGE_PARENT
from tests.support.executor import CANARY, run
from tests.support.waiting import wait_for

pytestmark = pytest.mark.executor

HOSTILE = Path(__file__).parent / "hostile"
SNIPPETS = sorted(path.stem for path in HOSTILE.glob("*.py") if path.stem != "__init__")
NORMAL = (
    "import torch, torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "t = torch.ones(1)\n"
    "dist.all_reduce(t)\n"
    "print(t.item())\n"
)


# Snippets that only end at the deadline get a short one; the others must end on their own.
TIMEOUTS = {"busy_loop": 2.0, "fork_bomb": 2.0}


def expected_status(name: str) -> RunStatus:
    """Read the status a hostile snippet must get from its `# expect:` header line."""
    header = (HOSTILE / f"{name}.py").read_text()
    match = re.search(r"^# expect: (\w+)", header, re.MULTILINE)
    assert match, f"{name}.py has no '# expect:' header"
    return RunStatus(match.group(1))


def leftover_processes(zygote: int, running: bool = False) -> list[str]:
    """Describe sandbox-uid processes that are this executor's, or that escaped every executor
    (with `running`, only those that still run code: not every thread of them exiting).

    Other executors (a developer's app, another test session) may be running real runs on this
    machine at the same time; their processes descend from their own zygote.
    """
    leftovers = []
    for entry in os.listdir("/proc"):
        uid = _uid(entry) if entry.isdigit() else "-"  # read once: the process may end meanwhile
        if uid.isdigit() and identities.in_range(int(uid)):
            chain = _ancestors(entry)
            mine = str(zygote) in chain
            escaped = not any("executor.zygote" in _cmdline(pid) for pid in chain)
            if (mine or escaped) and not (running and exiting.past_exit(int(entry))):
                leftovers.append(f"pid {entry}, ancestors {chain}")
    return leftovers


def _status(pid: str) -> dict[str, str]:
    try:
        text = Path("/proc", pid, "status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def _uid(pid: str) -> str:
    return _status(pid).get("Uid", "-").split()[0]


def _cmdline(pid: str) -> str:
    try:
        return Path("/proc", pid, "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _ancestors(pid: str) -> list[str]:
    chain = []
    while pid not in ("", "0", "1") and len(chain) < 32:
        pid = _status(pid).get("PPid", "")
        chain.append(pid)
    return chain


@pytest.fixture
def host_listener() -> Iterator[socket.socket]:
    """A TCP service on the host's loopback that no run may reach."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.2)
        yield listener


def check_fork_bomb(result: RunResult) -> None:
    assert result.ranks[0].status is RankStatus.TIMEOUT


def check_memory_bomb(result: RunResult) -> None:
    assert result.ranks[0].status is RankStatus.KILLED
    assert result.ranks[0].exit_code == -9


def check_output_flood(result: RunResult) -> None:
    rank = result.ranks[0]
    assert rank.truncated
    assert 0 < len(rank.stdout.encode()) <= 64 * 1024


def check_busy_loop(result: RunResult) -> None:
    assert 1500 <= result.duration_ms < 5000


def check_detached_daemon(result: RunResult) -> None:
    assert result.ranks[0].stdout == "daemon started\n"


def check_kill_parent(result: RunResult) -> None:
    rank = result.ranks[0]
    if rank.stdout == "parent is pid 0\n":
        # A rank started by a sibling warm parent (its own hash secret) has its parent outside
        # the run's pid namespace; kill(0) then signals its own one-process group: itself.
        assert rank.status is RankStatus.KILLED and rank.exit_code == -9
    else:
        assert rank.stdout == "parent is pid 1\n"  # the run's root-owned init
        assert rank.exception is not None and rank.exception.type == "PermissionError"


def check_host_loopback(result: RunResult) -> None:
    exception = result.ranks[0].exception
    assert exception is not None and exception.type == "ConnectionRefusedError"
    assert "connected" not in result.ranks[0].stdout


def check_read_secrets(result: RunResult) -> None:
    output = result.ranks[0].stdout + result.ranks[0].stderr
    assert CANARY not in output
    assert "/etc/shadow blocked: FileNotFoundError" in output  # not in the sandbox at all
    assert "secret.txt blocked: FileNotFoundError" in output  # world-readable, yet hidden
    assert "root:" not in output


def check_host_view(result: RunResult) -> None:
    seen = json.loads(result.ranks[0].stdout)
    assert CANARY not in result.ranks[0].stdout
    assert seen["sys"] == []  # an empty /sys: no interfaces, devices or cgroups of the host
    for path in ("/sys/class/net", "/sys/block", "/sys/fs/cgroup/memory"):
        assert seen[path] == "FileNotFoundError"
    assert seen[SIBLING_DB] == "FileNotFoundError"  # world-readable, but not on the allow-list
    assert seen["/proc/1/environ"] == "PermissionError"  # the run's root-owned init
    # Every mount is one the allow-list names; nothing of the host's other mounts.
    # The Python trees are there at neutral paths (executor/neutral_paths.py), and /proc's
    # host facts are masked or read-only (sandbox.PROC_MASKED, PROC_READ_ONLY).
    plan = make_plan([], 65534, 65534, "")
    masks = {f"/proc/{name}" for name in (*PROC_MASKED, *PROC_READ_ONLY)}
    allowed = {"/", "/tmp", "/dev/shm", "/proc", *masks, *plan.devices, *SYSTEM_TREES}
    neutral = {mount for mount in seen["mounts"] if mount.startswith("/opt/ranklab/")}
    assert set(seen["mounts"]) - neutral <= allowed, set(seen["mounts"]) - neutral - allowed
    # The warm parent's configuration went through a pipe: its command line names no setting.
    assert seen["init_cmdline"].split("\0")[1:3] == ["-m", "executor.zygote"]
    assert "{" not in seen["init_cmdline"]
    # The directory above this checkout does not exist in the run (where that directory is
    # /tmp, the run's private /tmp stands in for it): neither checkout is there.
    if PACKAGE_PARENT.parent == Path("/tmp"):
        assert PACKAGE_PARENT.name not in seen["checkouts"]
        assert Path(SIBLING_DB).parents[1].name not in seen["checkouts"]
    else:
        assert seen["checkouts"] == "FileNotFoundError"
    assert seen["accounts"] == ["root", "nobody"]


def check_leave_files(result: RunResult) -> None:
    assert "written" in result.ranks[0].stdout  # /tmp is writable, but private


def check_user_namespace(result: RunResult) -> None:
    exception = result.ranks[0].exception
    assert exception is not None and exception.type == "PermissionError"
    assert "root inside" not in result.ranks[0].stdout


CHECKS: dict[str, Callable[[RunResult], None]] = {
    "fork_bomb": check_fork_bomb,
    "memory_bomb": check_memory_bomb,
    "output_flood": check_output_flood,
    "busy_loop": check_busy_loop,
    "detached_daemon": check_detached_daemon,
    "kill_parent": check_kill_parent,
    "host_loopback": check_host_loopback,
    "read_secrets": check_read_secrets,
    "leave_files": check_leave_files,
    "host_view": check_host_view,
    "user_namespace": check_user_namespace,
}


def test_every_hostile_snippet_has_a_check() -> None:
    assert set(SNIPPETS) == set(CHECKS)


# Another checkout of the app beside this one, as on a shared development machine: its
# database is world-readable on the host.
SIBLING_DB = str(PACKAGE_PARENT.parent / f"ranklab-other-{os.getpid()}" / "var" / "ranklab.db")


@pytest.fixture(scope="module")
def sibling_checkout() -> Iterator[Path]:
    """A second checkout's database next to this checkout, holding the canary."""
    database = Path(SIBLING_DB)
    database.parent.mkdir(parents=True)
    database.write_text(CANARY)
    for path in (database, database.parent, database.parent.parent):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield database
    shutil.rmtree(database.parent.parent)


@pytest.mark.parametrize("name", SNIPPETS)
def test_hostile_snippet_is_contained_and_the_next_run_works(
    sandboxed: Executor,
    name: str,
    host_listener: socket.socket,
    secret_dir: Path,
    sibling_checkout: Path,
) -> None:
    leftover = f"ranklab-leftover-{uuid.uuid4().hex}"
    code = (
        (HOSTILE / f"{name}.py")
        .read_text()
        .replace("__HOST_PORT__", str(host_listener.getsockname()[1]))
        .replace("__CANARY_FILE__", str(secret_dir / "secret.txt"))
        .replace("__REPO__", str(PACKAGE_PARENT))
        .replace("__SIBLING_DB__", str(sibling_checkout))
        .replace("__LEFTOVER__", leftover)
    )
    result = run(sandboxed, code, nproc=1, timeout_s=TIMEOUTS.get(name, 10))
    assert result.status is expected_status(name), result
    CHECKS[name](result)
    # Nothing of the run runs code after its answer, nothing is left of it soon after (the
    # kernel's teardown of what was killed overlaps the answer), nothing reached the host.
    assert sandboxed.pool._process is not None
    zygote = sandboxed.pool._process.pid
    assert leftover_processes(zygote, running=True) == []
    wait_for(lambda: leftover_processes(zygote) == [], 10, "the run's processes to be gone")
    with pytest.raises(TimeoutError):
        host_listener.accept()
    for directory in ("/tmp", "/dev/shm", "/var/tmp", str(PACKAGE_PARENT)):
        assert not Path(directory, leftover).exists()
    # And the executor serves a normal distributed run right after.
    after = run(sandboxed, NORMAL, nproc=2)
    assert after.status is RunStatus.OK, after
    assert [r.stdout for r in after.ranks] == ["2.0\n", "2.0\n"]


@pytest.fixture
def fair(sandboxed: Executor) -> Iterator[Executor]:
    """A second executor with cpu_fairness on (it is off by default, for throughput)."""
    settings = sandboxed.settings.model_copy(update={"warm": False, "cpu_fairness": True})
    runner = Executor(settings)
    runner.pool.start()
    yield runner
    runner.close()


def test_with_cpu_fairness_a_fork_bomb_does_not_starve_a_concurrent_run(fair: Executor) -> None:
    """With cpu_fairness on, a concurrent (cold) 2-rank run ends while the bomb still runs: the
    bomb's processes are capped by its pids cgroup and share one slot's CPU weight. An order,
    not a time (the machine may be loaded). Measured 2026-11-29: the run took 0.5 s with the
    weight and 0.2 s without it, so the pids cap alone now keeps this bomb from starving it."""
    bomb = (HOSTILE / "fork_bomb.py").read_text()

    async def both() -> tuple[RunResult, bool]:
        attack = asyncio.create_task(
            fair.run(RunRequest(code=bomb, nproc=1, timeout_s=8, use_cache=False))
        )
        await asyncio.sleep(0.5)  # let the bomb fill its pids cgroup
        normal = await fair.run(RunRequest(code=NORMAL, nproc=2, use_cache=False))
        bomb_still_running = not attack.done()
        assert (await attack).status is RunStatus.TIMEOUT
        return normal, bomb_still_running

    normal, bomb_still_running = asyncio.run(both())
    assert normal.status is RunStatus.OK
    assert bomb_still_running

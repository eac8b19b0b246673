"""Slot cgroups on v1 and v2: what is written where (fake trees), and on the host's real cgroup2
mount, that a slot's members are listed and killed as the run's end needs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from executor import sandbox, zygote
from executor.limits import Limits, run_budget
from executor.sandbox import SandboxError, SandboxPlan, SlotCgroups

BUDGET = run_budget(2, 10.0, Limits())
MEMORY_EVENTS = "low 0\nhigh 0\nmax 3\noom 2\noom_kill {kills}\noom_group_kill 0\n"


def v2_tree(root: Path, slot: str | None = "slot-1-0", controllers: str = "cpu io memory pids",
            swap: bool = True) -> Path:  # fmt: skip
    """A cgroup v2 tree as the kernel shows it. The kernel fills a new cgroup with its control
    files on mkdir; a fake cannot, so the slot's directory is there already, files and all."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("\n")
    (root / "ranklab").mkdir()
    for name in ("cgroup.controllers", "cgroup.subtree_control", "cgroup.procs"):
        (root / "ranklab" / name).write_text("")
    if slot is not None:
        directory = root / "ranklab" / slot
        directory.mkdir()
        files = {"cgroup.procs": "", "memory.max": "max", "pids.max": "max", "cpu.weight": "100",
                 "memory.events": MEMORY_EVENTS.format(kills=0)}  # fmt: skip
        if swap:
            files["memory.swap.max"] = "max"
        for name, text in files.items():
            (directory / name).write_text(text)
    return root


def v1_tree(root: Path, slot: str | None = "slot-1-0", memsw: bool = True) -> Path:
    """A cgroup v1 layout: one hierarchy per controller, the slot already in each."""
    for controller in ("memory", "pids", "cpu"):
        (root / controller / "ranklab").mkdir(parents=True)
    if slot is None:
        return root
    memory = root / "memory" / "ranklab" / slot
    pids = root / "pids" / "ranklab" / slot
    memory.mkdir()
    pids.mkdir()
    (memory / "memory.limit_in_bytes").write_text("9223372036854771712")
    if memsw:
        (memory / "memory.memsw.limit_in_bytes").write_text("9223372036854771712")
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    (pids / "pids.max").write_text("max")
    return root


def plan(root: Path, cpu_fairness: bool = False) -> SandboxPlan:
    return SandboxPlan(exposed=(), cgroup_root=str(root), cpu_fairness=cpu_fairness)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every Path.write_text from here on, in order: (path, text) (clear it after building a
    fake tree)."""
    seen: list[tuple[str, str]] = []
    original = Path.write_text

    def recording(self: Path, data: str, *args: object, **kwargs: object) -> int:
        seen.append((str(self), data))
        return original(self, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", recording)
    return seen


def test_the_hierarchy_is_told_by_cgroup_controllers_at_the_root(tmp_path: Path) -> None:
    assert sandbox.cgroup_version(v2_tree(tmp_path / "two")) == 2
    assert sandbox.cgroup_version(v1_tree(tmp_path / "one")) == 1
    (tmp_path / "none").mkdir()
    with pytest.raises(SandboxError, match=r"neither cgroup v2 .* nor cgroup v1"):
        sandbox.cgroup_version(tmp_path / "none")


def test_neither_hierarchy_refuses_the_slot_with_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="no usable cgroup hierarchy"):
        SlotCgroups.for_plan(plan(tmp_path), "slot-1-0")


def test_a_v2_slot_hands_memory_and_pids_down_from_the_root_then_limits_the_run(
    tmp_path: Path, writes: list[tuple[str, str]]
) -> None:
    root = v2_tree(tmp_path)
    writes.clear()
    cgroups = SlotCgroups.for_plan(plan(root), "slot-1-0")
    cgroups.set_limits(BUDGET)
    slot = root / "ranklab" / "slot-1-0"
    assert cgroups.dirs == [slot]
    assert writes == [
        # the root hands the controllers to ranklab, which hands them to its slots: in that order
        (f"{root}/cgroup.subtree_control", "+memory +pids"),
        (f"{root}/ranklab/cgroup.subtree_control", "+memory +pids"),
        (f"{slot}/memory.max", str(BUDGET.memory_bytes)),
        (f"{slot}/memory.swap.max", "0"),
        (f"{slot}/pids.max", str(BUDGET.pids)),
    ]


def test_a_v2_slot_enables_only_the_controllers_not_enabled_yet(
    tmp_path: Path, writes: list[tuple[str, str]]
) -> None:
    root = v2_tree(tmp_path)
    (root / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (root / "ranklab" / "cgroup.subtree_control").write_text("memory\n")
    writes.clear()
    SlotCgroups.for_plan(plan(root), "slot-1-0")
    assert writes == [(f"{root}/ranklab/cgroup.subtree_control", "+pids")]


def test_cpu_fairness_on_v2_adds_cpu_with_an_equal_weight(
    tmp_path: Path, writes: list[tuple[str, str]]
) -> None:
    root = v2_tree(tmp_path)
    (root / "ranklab" / "slot-1-0" / "cpu.weight").write_text("250")
    writes.clear()
    SlotCgroups.for_plan(plan(root, cpu_fairness=True), "slot-1-0")
    assert (f"{root}/ranklab/cgroup.subtree_control", "+memory +pids +cpu") in writes
    assert (root / "ranklab" / "slot-1-0" / "cpu.weight").read_text() == "100"


def test_cpu_fairness_on_v2_without_the_cpu_controller_limits_memory_and_pids_only(
    tmp_path: Path, writes: list[tuple[str, str]]
) -> None:
    root = v2_tree(tmp_path, controllers="memory pids")
    writes.clear()
    SlotCgroups.for_plan(plan(root, cpu_fairness=True), "slot-1-0")
    assert writes[0] == (f"{root}/cgroup.subtree_control", "+memory +pids")
    assert not any(path.endswith("cpu.weight") for path, _ in writes)


def test_without_swap_accounting_no_swap_file_is_made_up(tmp_path: Path) -> None:
    root = v2_tree(tmp_path, swap=False)
    SlotCgroups.for_plan(plan(root), "slot-1-0").set_limits(BUDGET)
    assert not (root / "ranklab" / "slot-1-0" / "memory.swap.max").exists()
    assert (root / "ranklab" / "slot-1-0" / "memory.max").read_text() == str(BUDGET.memory_bytes)


def test_a_v2_root_without_the_pids_controller_is_refused_by_name(tmp_path: Path) -> None:
    root = v2_tree(tmp_path, controllers="cpu io memory")
    with pytest.raises(SandboxError, match=r"does not offer the pids controller.*cpu io memory"):
        SlotCgroups.for_plan(plan(root), "slot-1-0")


def test_a_v2_parent_holding_processes_is_refused_with_the_rule_it_breaks(tmp_path: Path) -> None:
    root = v2_tree(tmp_path)
    (root / "ranklab" / "cgroup.procs").write_text("4242\n")
    with pytest.raises(SandboxError, match="no internal processes"):
        SlotCgroups.for_plan(plan(root), "slot-1-0")


def test_a_plain_directory_is_not_taken_for_a_v2_slot(tmp_path: Path) -> None:
    root = v2_tree(tmp_path, slot=None)  # mkdir makes a plain directory: no kernel behind it
    with pytest.raises(SandboxError, match="is not a cgroup v2 slot with memory"):
        SlotCgroups.for_plan(plan(root), "slot-1-0")


def test_v2_oom_kills_come_from_memory_events(tmp_path: Path) -> None:
    root = v2_tree(tmp_path)
    cgroups = SlotCgroups.for_plan(plan(root), "slot-1-0")
    assert cgroups.oom_kills() == 0
    (root / "ranklab" / "slot-1-0" / "memory.events").write_text(MEMORY_EVENTS.format(kills=5))
    assert cgroups.oom_kills() == 5  # oom_kill, not the oom or max events
    (root / "ranklab" / "slot-1-0" / "memory.events").unlink()
    assert cgroups.oom_kills() == 0


def test_joining_a_v2_slot_writes_the_pid_to_its_one_cgroup_procs(tmp_path: Path) -> None:
    root = v2_tree(tmp_path)
    SlotCgroups.for_plan(plan(root), "slot-1-0").join()
    assert (root / "ranklab" / "slot-1-0" / "cgroup.procs").read_text() == str(os.getpid())
    assert (root / "ranklab" / "cgroup.procs").read_text() == ""  # never the parent


def test_a_v1_slot_still_limits_memory_and_swap_and_counts_oom_kills(tmp_path: Path) -> None:
    root = v1_tree(tmp_path)
    cgroups = SlotCgroups.for_plan(plan(root), "slot-1-0")
    cgroups.set_limits(BUDGET)
    memory = root / "memory" / "ranklab" / "slot-1-0"
    assert cgroups.dirs == [memory, root / "pids" / "ranklab" / "slot-1-0"]
    assert (memory / "memory.limit_in_bytes").read_text() == str(BUDGET.memory_bytes)
    assert (memory / "memory.memsw.limit_in_bytes").read_text() == str(BUDGET.memory_bytes)
    assert (root / "pids" / "ranklab" / "slot-1-0" / "pids.max").read_text() == str(BUDGET.pids)
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    assert cgroups.oom_kills() == 3


def _dead_pid() -> int:
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # never a live process


@pytest.mark.parametrize("version", [1, 2])
def test_stale_slots_of_dead_executors_are_removed_and_live_ones_kept(
    tmp_path: Path, version: int
) -> None:
    root = v2_tree(tmp_path, slot=None) if version == 2 else v1_tree(tmp_path, slot=None)
    parents = sandbox.slot_cgroup_parents(str(root))
    assert parents == (
        [root / "ranklab"]
        if version == 2
        else [root / controller / "ranklab" for controller in ("memory", "pids", "cpu")]
    )
    for parent in parents:
        # Empty directories: the kernel lets a cgroup with no process go despite its files.
        (parent / f"slot-{_dead_pid()}-0").mkdir()
        (parent / f"slot-{os.getpid()}-0").mkdir()
    zygote._remove_stale_cgroups(plan(root))
    for parent in parents:
        names = {path.name for path in parent.iterdir() if path.is_dir()}
        assert names == {f"slot-{os.getpid()}-0"}  # another live executor's slot stays
    zygote._remove_stale_cgroups(plan(root), prefix=f"slot-{os.getpid()}-")
    for parent in parents:
        assert not any(path.is_dir() for path in parent.iterdir())
    if version == 2:
        assert (root / "ranklab" / "cgroup.procs").exists()  # the parent's own files stay


REAL_V2 = Path("/sys/fs/cgroup/unified")
# A "slot worker" joins a real v2 slot, starts a run's process (its grandchild) and a process
# under a spared parent (as a sibling's worker is), then clears the slot as a run's end does.
MEMBERS_AND_KILL = r"""
import json, os, subprocess, sys
from pathlib import Path
from executor.sandbox import CgroupV2Slot, SlotCgroups

root, name = Path(sys.argv[1]), sys.argv[2]
cgroups = SlotCgroups(CgroupV2Slot(root, name, controllers=()))
cgroups.join()
def start():
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    return shell, int(shell.stdout.readline())
run_shell, run_sleep = start()
spared_shell, spared_sleep = start()
before = sorted(cgroups.members())
cgroups.kill_all_but({spared_shell.pid})
run_shell.wait(timeout=5)  # its `wait` returns once its sleep is killed
alive = {"run_sleep": os.path.exists(f"/proc/{run_sleep}"),
         "spared_sleep": os.path.exists(f"/proc/{spared_sleep}")}
os.kill(spared_sleep, 9)
spared_shell.wait(timeout=10)
(root / "cgroup.procs").write_text(str(os.getpid()))  # leave, so that the slot can go
cgroups.remove()
print(json.dumps({"worker": os.getpid(), "before": before, "alive": alive,
                  "expected": [run_shell.pid, run_sleep, spared_shell.pid, spared_sleep],
                  "removed": not cgroups.dirs[0].exists()}))
"""


def _real_cgroup2() -> str | None:
    """Why the real cgroup2 test cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    if not any(line.split()[1:3] == [str(REAL_V2), "cgroup2"] for line in mounts):
        return f"no cgroup2 mounted at {REAL_V2}"
    return None


@pytest.mark.skipif(_real_cgroup2() is not None, reason=str(_real_cgroup2()))
def test_a_real_v2_slot_lists_its_members_and_kills_all_but_the_spared() -> None:
    name = f"test-{os.getpid()}"
    slot = REAL_V2 / "ranklab" / name
    try:
        done = subprocess.run(
            [sys.executable, "-c", MEMBERS_AND_KILL, str(REAL_V2), name],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        # Everything started after joining is in the slot, as the worker is.
        assert {seen["worker"], *seen["expected"]} <= set(seen["before"])
        assert seen["alive"] == {"run_sleep": False, "spared_sleep": True}
        assert seen["removed"]
    finally:
        _clear(slot)


def _clear(slot: Path) -> None:
    """After a failure: end what the test started in its own slot, then remove the slot."""
    for _ in range(100):
        with contextlib.suppress(OSError):
            for pid in (slot / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        with contextlib.suppress(OSError):
            slot.rmdir()
        if not slot.exists():
            break
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        slot.parent.rmdir()  # only if no other slot is there

"""A process's wait status read from /proc as it exits (executor/exiting.py): always the one
the kernel then reports to wait, and before the reap when the process's memory is large."""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import signal
import threading
import time
from collections.abc import Callable

import pytest

from executor.exiting import can_read_exit_codes, past_exit, settled_status

SYS_EXIT = 60  # x86-64: ends the calling thread alone (exit_group is 231)


def _started(body: Callable[[int], None]) -> int:
    """Fork a child running body(ready_fd) (never this test's code after it); return its pid
    once it has written b"x" on ready_fd."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready_r)
            body(ready_w)
        finally:
            os._exit(70)
    os.close(ready_w)
    assert os.read(ready_r, 1) == b"x"
    os.close(ready_r)
    return pid


def _watch(body: Callable[[int], None], kill: bool = False) -> tuple[list[int], int, bool]:
    """Start body in a child (_started); read settled_status until the child is reaped.
    Return every status read, the status waitpid gave, and whether one was read before the
    child could be reaped."""
    pid = _started(body)
    if kill:
        os.kill(pid, signal.SIGKILL)
    seen: list[int] = []
    early = False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = settled_status(pid)
        reaped, wait_status = os.waitpid(pid, os.WNOHANG)
        if status is not None:
            seen.append(status)
            early |= reaped == 0
        if reaped:
            return seen, wait_status, early
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the child did not end")


def _until_early(
    body: Callable[[int], None], kill: bool = False, tries: int = 3
) -> tuple[list[int], int, bool]:
    """_watch up to `tries` times, until a status is read before the reap (the window is the
    teardown of 400 MiB: tens of ms, which a busy machine may not give the reader once)."""
    for _ in range(tries):
        seen, wait_status, early = _watch(body, kill)
        assert set(seen) <= {wait_status}  # never another status than the kernel's, each time
        if early:
            break
    return seen, wait_status, early


def _large(ready: int) -> None:
    """Touch 400 MiB, whose teardown at exit takes tens of ms, at the lowest priority (on a
    busy machine the teardown then waits for the reader), then say ready."""
    memory = mmap.mmap(-1, 400 << 20)
    for offset in range(0, len(memory), mmap.PAGESIZE):
        memory[offset] = 1
    os.nice(19)
    os.write(ready, b"x")


def test_a_plain_exit_settles_before_the_reap_with_the_status_wait_gives() -> None:
    def body(ready: int) -> None:
        _large(ready)
        os._exit(3)

    seen, wait_status, early = _until_early(body)
    assert os.waitstatus_to_exitcode(wait_status) == 3
    assert early and set(seen) == {wait_status}  # read before the teardown of 400 MiB ended


def test_every_thread_of_the_group_exits_with_its_code() -> None:
    def body(ready: int) -> None:
        hold = threading.Event()
        for _ in range(4):
            threading.Thread(target=hold.wait, daemon=True).start()
        _large(ready)
        os._exit(5)

    seen, wait_status, early = _until_early(body)
    assert os.waitstatus_to_exitcode(wait_status) == 5
    assert early and set(seen) == {wait_status}


def test_a_kill_settles_as_the_signal() -> None:
    seen, wait_status, early = _until_early(_large_then_asleep, kill=True)
    assert os.waitstatus_to_exitcode(wait_status) == -signal.SIGKILL
    assert early and set(seen) == {wait_status}


def test_a_main_thread_that_ends_alone_never_reads_as_the_group_s_end() -> None:
    # The main thread leaves with 0 while another runs on, then ends the group with 7: the
    # main thread's own code must never be taken for the process's.
    def body(ready: int) -> None:
        def later() -> None:
            time.sleep(0.3)
            os._exit(7)

        threading.Thread(target=later).start()
        os.write(ready, b"x")
        ctypes.CDLL(None).syscall(SYS_EXIT, 0)

    seen, wait_status, _ = _watch(body)
    assert os.waitstatus_to_exitcode(wait_status) == 7
    assert set(seen) <= {wait_status}


def test_nothing_is_read_of_a_running_process_or_a_gone_one() -> None:
    assert settled_status(os.getpid()) is None
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert settled_status(pid) is None


def _large_then_asleep(ready: int) -> None:
    _large(ready)
    time.sleep(60)


def test_a_killed_process_is_past_its_exit_before_its_reap() -> None:
    pid = _started(_large_then_asleep)
    assert not past_exit(pid)  # asleep, but it would run on
    os.kill(pid, signal.SIGKILL)
    readings = []
    while not os.waitpid(pid, os.WNOHANG)[0]:
        readings.append(past_exit(pid))
    assert readings and readings[-1]
    assert past_exit(pid)  # gone


def test_without_the_capability_exit_codes_read_as_0_and_are_not_read() -> None:
    # Why init checks CAP_SYS_PTRACE first: the kernel shows another user's exit code only to
    # a reader allowed to trace it, and 0 to any other, which would pass for a clean exit.
    if os.geteuid() != 0:
        pytest.skip("needs root, to read as another user")
    assert can_read_exit_codes()
    go_r, go_w = os.pipe()

    def target_body(ready: int) -> None:
        _large(ready)
        os.read(go_r, 1)  # once the reader reads
        os._exit(3)

    target = _started(target_body)
    reader_r, reader_w = os.pipe()

    def reader_body(ready: int) -> None:
        os.setgid(4321)
        os.setuid(4321)  # no capabilities left
        os.write(ready, b"x")
        seen: set[int | None] = set()
        while os.path.exists(f"/proc/{target}/task"):
            seen.add(settled_status(target))
        os.write(reader_w, json.dumps([can_read_exit_codes(), sorted(seen - {None})]).encode())
        os._exit(0)

    reader = _started(reader_body)
    os.close(reader_w)
    os.write(go_w, b"x")
    os.waitpid(target, 0)
    os.waitpid(reader, 0)
    capable, statuses = json.loads(os.read(reader_r, 4096))
    os.close(reader_r)
    assert capable is False
    assert statuses == [0]  # not 3 << 8: a reader without the capability would take a clean exit

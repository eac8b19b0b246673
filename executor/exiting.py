"""A process's wait status, read from the kernel as it exits, before its memory is torn down.

A rank's exit is mostly the kernel's work: do_exit() (kernel/exit.c, Linux 6.x) sets the task's
PF_EXITING flag, then its `exit_code` (the wait status `wait` will report), then detaches its
memory (exit_mm: `current->mm = NULL`, then mmput), and only once the last thread has dropped the
memory, which tears down every page-table entry (a forked rank of a warm parent maps ~60,000:
6-8 ms of a 2-rank run's end on 2 cores), does the thread group become a zombie its parent can
reap. Waiting for the reap put that teardown between the snippet's last line and the answer.

/proc/<pid>/task/<tid>/stat shows each of those steps for each thread (proc(5): field 9 the
flags, 23 the virtual size, which is 0 once the thread's memory is detached, 52 the exit code,
in waitpid's form, to a reader allowed to trace the process: init holds CAP_SYS_PTRACE, and
reads nothing here without it, see can_read_exit_codes). So the status is
settled, and read here, once every thread still listed is exiting with its memory detached,
all show the same exit code, and one of them is not yet a zombie. A thread group only exits
whole through exit_group (os._exit, a fatal signal, returning from main): every thread then
exits with the group's code. Anything else is refused and the caller waits for the reap:
- a main thread that ended alone (the SYS_exit system call) while others ran on shows an exit
  code of its own, which is not the group's: the threads disagree, or still run, or it is the
  zombie left alone once the others are released (the reap is at hand then anyway);
- a thread that has not reached exit_mm shows its memory: not yet settled;
- a process whose threads are gone from /proc (reaped meanwhile) gives nothing.

The value is the kernel's, never the process's own say (a rank's record on fd 3 is the snippet's
to forge, records.py): only its timing differs from the reap's.
"""

from __future__ import annotations

import os

PF_EXITING = 0x4  # include/linux/sched.h
CAP_SYS_PTRACE = 19  # include/uapi/linux/capability.h
_STATE, _FLAGS, _VSIZE, _EXIT_CODE = 0, 6, 20, 49  # fields 3, 9, 23, 52, after the ")"


def can_read_exit_codes() -> bool:
    """Whether this process reads other users' exit codes in /proc: without CAP_SYS_PTRACE
    the kernel shows it 0 for each (fs/proc/array.c), which would pass for a clean exit."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def settled_status(pid: int, proc: str = "/proc") -> int | None:
    """The wait status the kernel will report for `pid` once it is reaped, if every one of its
    threads is past the point where that status is fixed; None otherwise (or when unsure)."""
    try:
        threads = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return None
    codes = set()
    exiting = False  # a thread not yet a zombie: the group's end is under way
    for thread in threads:
        try:
            with open(f"{proc}/{pid}/task/{thread}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # this thread has been released since the listing: it had exited
        try:
            state = fields[_STATE]
            flags, vsize, code = int(fields[_FLAGS]), int(fields[_VSIZE]), int(fields[_EXIT_CODE])
        except (IndexError, ValueError):
            return None
        if not flags & PF_EXITING or vsize != 0:
            return None  # still running, or exiting but its code may not be set yet
        exiting |= state not in (b"Z", b"X")
        codes.add(code)
    if not exiting or len(codes) != 1:
        # A zombie main thread alone (the rest released): its teardown is done and the reap
        # is at hand, and its own code need not be the group's (it may have ended alone,
        # another thread ending the group later). Or threads that disagree, for that reason.
        return None
    return codes.pop()


def settled_exit_code(pid: int) -> int | None:
    """settled_status as os.waitstatus_to_exitcode gives it (-N for signal N)."""
    status = settled_status(pid)
    if status is None:
        return None
    try:
        return os.waitstatus_to_exitcode(status)
    except ValueError:
        return None


def past_exit(pid: int, proc: str = "/proc") -> bool:
    """Whether `pid` runs no more code of its own: every thread of it is exiting (or it is
    gone). A process killed with SIGKILL is, once each thread has taken the signal."""
    try:
        threads = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return True
    for thread in threads:
        try:
            with open(f"{proc}/{pid}/task/{thread}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        try:
            if not int(fields[_FLAGS]) & PF_EXITING:
                return False
        except (IndexError, ValueError):
            return False
    return True

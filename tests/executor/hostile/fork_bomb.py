# attack: fork bomb — every process forks forever, trying to exhaust the host's process table.
# expect: timeout — the pids cgroup caps the run's processes (forks then fail), the wall deadline
# ends the run, and the pid namespace takes every last fork with it.
import contextlib
import os

while True:
    with contextlib.suppress(OSError):
        os.fork()

"""attack: watch, with inotify, what the host and other runs do with the files a run shares with
them: /usr is a bind of the host's and the Python tree one overlay shared by every run, so a
watch on /usr/bin named every program the host ran, and a watch on the Python tree's json/
named a concurrent run's read of json/tool.py, by name and time (its __pycache__ would name
another run's imports). Seccomp cannot read the path a watch is asked for.
expect: the watching run ends ok with every inotify call refused with ENOSYS (what a kernel
without inotify answers, so that file watchers fall back to polling), and it sees nothing of
the run beside it, which reads json/tool.py and ends ok."""

from __future__ import annotations

import json

import pytest

from executor.contract import RunRequest, RunStatus
from executor.runner import Executor
from tests.attacks.beside import beside

pytestmark = pytest.mark.executor

JSON_DIR = "/opt/ranklab/python/lib/python3.11/json"
WATCH = f"""
import ctypes, json, os, select, time
libc = ctypes.CDLL(None, use_errno=True)
IN_ACCESS, IN_OPEN, IN_CLOSE = 0x1, 0x20, 0x18
def answer(value):
    return value if value >= 0 else os.strerror(ctypes.get_errno())
seen = {{"init1": answer(libc.inotify_init1(0))}}
fd = seen["init1"] if isinstance(seen["init1"], int) else -1
# Even without an instance: a refused call answers ENOSYS, not EBADF.
for path in (b"/usr/bin", b"{JSON_DIR}"):
    seen[path.decode()] = answer(libc.inotify_add_watch(fd, path, IN_ACCESS | IN_OPEN | IN_CLOSE))
print("watching", flush=True)
names = set()
deadline = time.monotonic() + 6
while fd >= 0 and "tool.py" not in names and time.monotonic() < deadline:
    if select.select([fd], [], [], 0.2)[0]:
        chunk = os.read(fd, 65536)
        while chunk:
            length = int.from_bytes(chunk[12:16], "little")
            names.add(chunk[16:16 + length].rstrip(b"\\0").decode())
            chunk = chunk[16 + length:]
if fd < 0:
    time.sleep(2)  # still running while the run beside it reads, as a watcher would be
seen["events"] = sorted(names)
print(json.dumps(seen))
"""
READ = f"print(len(open('{JSON_DIR}/tool.py').read()) > 0)\n"


def test_a_run_cannot_watch_the_files_the_host_and_other_runs_open(sandboxed: Executor) -> None:
    watcher = RunRequest(code=WATCH, nproc=1, timeout_s=10, use_cache=False)
    reader = RunRequest(code=READ, nproc=1, timeout_s=10, use_cache=False)
    watched, read = beside(sandboxed, watcher, "watching", reader)
    assert read.status is RunStatus.OK and read.ranks[0].stdout == "True\n", read
    assert watched.status is RunStatus.OK, watched
    seen = json.loads(watched.ranks[0].stdout.splitlines()[-1])
    refused = "Function not implemented"
    assert seen == {"init1": refused, "/usr/bin": refused, JSON_DIR: refused, "events": []}, seen

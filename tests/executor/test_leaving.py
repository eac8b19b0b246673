"""How a leaving rank reads a peer from /proc (executor/leaving.py): real processes whose threads
are named as gloo names them, or not yet named."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from executor import leaving

# A process with one thread besides its main one, named as argv[1] says ("" leaves the name the
# process has, as a thread has until it names itself), then more threads named after argv[2:].
PEER = """
import sys, threading, time
def named(name):
    def body():
        if name:
            with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as comm:
                comm.write(name)
        time.sleep(60)
    return body
for name in sys.argv[1:]:
    threading.Thread(target=named(name), daemon=True).start()
time.sleep(0.5)
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture
def peer() -> Iterator[object]:
    started: list[subprocess.Popen[str]] = []

    def start(*names: str) -> int:
        process = subprocess.Popen(
            [sys.executable, "-c", PEER, *names], stdout=subprocess.PIPE, text=True
        )
        started.append(process)
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        return process.pid

    yield start
    for process in started:
        process.kill()
        process.communicate()  # reaps it and closes its stdout


def test_a_peer_whose_other_thread_is_not_yet_named_reads_as_joining(peer) -> None:
    assert leaving.joining(peer("")) is True


def test_a_peer_with_its_transport_and_workers_has_joined_and_one_without_gloo_has_none(
    peer,
) -> None:
    transport, worker = leaving.GLOO_TRANSPORT_THREAD, leaving.GLOO_WORKER_THREAD
    assert leaving.joining(peer(transport)) is True  # connecting its mesh: no workers yet
    assert leaving.joining(peer(transport, worker, worker)) is False
    assert leaving.joining(peer("pt_tcpstore_uv")) is None  # a named thread, not gloo's
    # A group being destroyed: its transport renamed, its workers stopping.
    assert leaving.joining(peer(leaving.GLOO_LEAVING_THREAD, worker)) is None

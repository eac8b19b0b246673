"""Attack: open sockets of families a rank has no use for: AF_VSOCK (a VM's line to its
hypervisor), AF_PACKET (raw frames), AF_ALG (the kernel's crypto API), and netlink beyond
route (audit, the host's socket table). Must get: status ok, each socket() refused with
PermissionError; the families ranks use (unix, inet, inet6) still open."""

from __future__ import annotations

import json

import pytest

from executor.contract import RunStatus
from executor.runner import Executor
from tests.support.executor import run

pytestmark = pytest.mark.executor

ATTACK = """
import json, socket
tries = {"vsock": (40, socket.SOCK_STREAM, 0), "packet": (17, socket.SOCK_RAW, 0),
         "alg": (38, socket.SOCK_SEQPACKET, 0), "netlink_audit": (16, socket.SOCK_RAW, 9),
         "netlink_sock_diag": (16, socket.SOCK_RAW, 4), "unix": (1, socket.SOCK_STREAM, 0),
         "inet": (2, socket.SOCK_STREAM, 0), "inet6": (10, socket.SOCK_STREAM, 0)}
outcome = {}
for name, (family, kind, protocol) in tries.items():
    try:
        socket.socket(family, kind, protocol).close()
        outcome[name] = "opened"
    except OSError as error:
        outcome[name] = type(error).__name__
print(json.dumps(outcome))
"""


def test_only_the_socket_families_ranks_need_open(sandboxed: Executor) -> None:
    result = run(sandboxed, ATTACK, nproc=1)
    assert result.status == RunStatus.OK, result
    assert json.loads(result.ranks[0].stdout) == {
        "vsock": "PermissionError",
        "packet": "PermissionError",
        "alg": "PermissionError",
        "netlink_audit": "PermissionError",
        "netlink_sock_diag": "PermissionError",
        "unix": "opened",
        "inet": "opened",
        "inet6": "opened",
    }

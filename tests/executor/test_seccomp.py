"""The ranks' seccomp allow-list, loaded for real into a forked child of this test process.

Each probe forks, loads the compiled filter (as a rank does, after no_new_privs), makes one
system call through libc's syscall() and reports the errno; the parent reads it from a pipe.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from executor import seccomp_policy
from tests.support.page_cache import cached

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the raw system call numbers below are x86-64's"
)

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS = 38
KILLED = -1000  # what probe() returns when the child died of a signal instead of answering

# x86-64 numbers of calls a rank has no use for and that widen the kernel's attack surface.
REFUSED = {
    "add_key": 248, "request_key": 249, "keyctl": 250, "kexec_load": 246,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "perf_event_open": 298,
    "io_uring_setup": 425, "io_uring_enter": 426, "ptrace": 101, "process_vm_readv": 310,
    "unshare": 272, "setns": 308, "mount": 165, "fsopen": 430, "open_tree": 428,
    "init_module": 175, "syslog": 103, "name_to_handle_at": 303, "fanotify_init": 300,
    "io_setup": 206, "mq_open": 240, "sync": 162, "pidfd_getfd": 438, "kcmp": 312,
    "modify_ldt": 154, "lookup_dcookie": 212, "quotactl_fd": 443, "landlock_create_ruleset": 444,
    "memfd_secret": 447, "process_madvise": 440, "set_mempolicy_home_node": 450,
    "lsm_get_self_attr": 459, "listmount": 458,
}  # fmt: skip
SYS_CLONE, SYS_CLONE3, SYS_SOCKET, SYS_GETPID, SYS_PERSONALITY = 56, 435, 41, 39, 135
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17


def probe(call: Callable[[], int]) -> int:
    """Run call() under the filter in a fresh child; return 0, the errno it failed with, or
    KILLED if the kernel killed the child."""
    program = seccomp_policy.program()  # compiled here, as in the zygote, before the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(read_end)
            _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            seccomp_policy.install(program)
            ctypes.set_errno(0)
            result = call()
            outcome = 0 if result >= 0 else ctypes.get_errno()
            os.write(write_end, str(outcome).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as answer:
        text = answer.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return KILLED
    return int(text)


def raw(number: int, *args: int) -> Callable[[], int]:
    """A system call by number, as a snippet can make with ctypes."""
    return lambda: _libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))


def test_everyday_calls_are_allowed() -> None:
    assert probe(raw(SYS_GETPID)) == 0
    assert probe(lambda: len(os.listdir("/proc/self/fd"))) == 0
    assert probe(lambda: os.waitpid(pid, 0)[0] if (pid := os.fork()) else os._exit(0)) == 0


def test_a_thread_starts_though_clone3_is_refused() -> None:
    # glibc's pthread_create tries clone3 first and falls back to clone on ENOSYS.
    import threading

    def start_thread() -> int:
        thread = threading.Thread(target=lambda: None)
        thread.start()
        thread.join()
        return 0

    assert probe(start_thread) == 0
    assert probe(raw(SYS_CLONE3, 0, 0)) == errno.ENOSYS


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_calls_outside_the_list_are_refused(name: str) -> None:
    assert probe(raw(REFUSED[name], 0, 0, 0, 0)) == errno.EPERM


@pytest.mark.parametrize("number", [400, 423, 470, 1000])
def test_numbers_the_list_does_not_name_are_refused(number: int) -> None:
    # Unassigned on x86-64 today (470 may not be, on the newest kernels): a deny-list lets a
    # call through as soon as a kernel assigns its number; the allow-list never does. (Not
    # 335 or 336: uretprobe and uprobe, which the kernel lets past every seccomp filter since
    # 6.11/6.16, for its own trampolines; called from anywhere else they only fail or kill the
    # caller.)
    assert probe(raw(number)) == errno.EPERM


def test_a_new_namespace_is_refused_even_through_plain_clone() -> None:
    assert probe(raw(SYS_CLONE, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)) == errno.EPERM


def test_another_abi_of_the_cpu_kills_the_process() -> None:
    # x32 numbers are the x86-64 ones with bit 30 set: without the check, a call made through
    # that ABI would dodge every rule above.
    assert probe(raw(X32_SYSCALL_BIT | SYS_GETPID)) == KILLED


def test_personality_can_be_read_but_not_changed() -> None:
    read_implies_exec = 0x0400000
    assert probe(raw(SYS_PERSONALITY, 0xFFFFFFFF)) == 0
    assert probe(raw(SYS_PERSONALITY, read_implies_exec)) == errno.EPERM


@pytest.mark.parametrize(
    ("family", "kind", "protocol"),
    [
        (socket.AF_UNIX, socket.SOCK_STREAM, 0),
        (socket.AF_INET, socket.SOCK_STREAM, 0),
        (socket.AF_INET6, socket.SOCK_DGRAM, 0),
        (socket.AF_NETLINK, socket.SOCK_RAW, 0),  # NETLINK_ROUTE: getifaddrs()
    ],
)
def test_the_socket_families_ranks_use_are_allowed(family: int, kind: int, protocol: int) -> None:
    assert probe(raw(SYS_SOCKET, family, kind, protocol)) == 0


@pytest.mark.parametrize(
    ("family", "kind", "protocol"),
    [
        (40, socket.SOCK_STREAM, 0),  # AF_VSOCK: the hypervisor's side of a VM
        (17, socket.SOCK_RAW, 0),  # AF_PACKET
        (38, socket.SOCK_SEQPACKET, 0),  # AF_ALG: the kernel's crypto API
        (socket.AF_NETLINK, socket.SOCK_RAW, 9),  # NETLINK_AUDIT
        (socket.AF_NETLINK, socket.SOCK_RAW, 4),  # NETLINK_SOCK_DIAG: the host's sockets
        (socket.AF_UNIX | (1 << 32), socket.SOCK_STREAM, 0),  # high bits the kernel ignores
    ],
)
def test_other_socket_families_are_refused(family: int, kind: int, protocol: int) -> None:
    assert probe(raw(SYS_SOCKET, family, kind, protocol)) == errno.EPERM


def test_socketpair_is_unix_only() -> None:
    assert probe(lambda: len(socket.socketpair())) == 0
    assert probe(raw(53, socket.AF_INET, socket.SOCK_STREAM, 0, 0)) == errno.EPERM


def pseudo_code(arch: str) -> str:
    """libseccomp's readable rendering of the filter built for `arch`."""
    descriptor = os.memfd_create("pfc")
    try:
        with os.fdopen(os.dup(descriptor), "rb") as stream:
            seccomp_policy.build(arch).export_pfc(stream)
        os.lseek(descriptor, 0, os.SEEK_SET)
        return os.read(descriptor, 1 << 20).decode()
    finally:
        os.close(descriptor)


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_same_list_makes_an_allow_list_on_arm64_and_x86_64(arch: str) -> None:
    text = pseudo_code(arch)
    assert f"# filter for arch {arch} " in text
    for allowed in ('"openat"', '"mmap"', '"ioctl"', '"futex"', '"clone"', '"socket"'):
        assert allowed in text
    for absent in ('"bpf"', '"keyctl"', '"io_uring_setup"', '"userfaultfd"', '"unshare"'):
        assert absent not in text
    default = text.split("# default action", 1)[1]
    assert default.split()[1] == "ERRNO(1);"  # EPERM for all the rest


# x86-64 numbers: inotify_init, inotify_add_watch, inotify_rm_watch, inotify_init1.
INOTIFY = {"inotify_init": 253, "inotify_add_watch": 254, "inotify_rm_watch": 255,
           "inotify_init1": 294}  # fmt: skip


@pytest.mark.parametrize("name", sorted(INOTIFY))
def test_inotify_answers_as_a_kernel_without_it(name: str) -> None:
    # A watch would name what the host and other runs open in the mounts a run shares with
    # them (/usr, the Python tree); ENOSYS makes a file watcher fall back to polling.
    assert probe(raw(INOTIFY[name], -1, 0, 0)) == errno.ENOSYS


SYS_FADVISE64 = 221
POSIX_FADV_WILLNEED, POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE = 3, 4, 5
MADV_DONTNEED, MADV_HUGEPAGE, MADV_COLD, MADV_PAGEOUT = 4, 14, 20, 21


@pytest.fixture
def cached_file(tmp_path: Path) -> Path:
    """A file on disk, written back and read, so its pages are clean and in the page cache."""
    path = tmp_path / "shared.bin"
    path.write_bytes(os.urandom(1 << 16))
    descriptor = os.open(path, os.O_RDONLY)
    os.fsync(descriptor)
    os.close(descriptor)
    path.read_bytes()
    assert cached(path)
    return path


def fadvise(path: Path, advice: int) -> Callable[[], int]:
    def call() -> int:
        return raw(SYS_FADVISE64, os.open(path, os.O_RDONLY), 0, 0, advice)()

    return call


def madvise(path: Path, advice: int) -> Callable[[], int]:
    def call() -> int:
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ) as mapped:
            sum(mapped[offset] for offset in range(0, len(mapped), mmap.PAGESIZE))  # map them
            mapped.madvise(advice)
        return 0

    return call


@pytest.mark.parametrize("advice", [POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE])
def test_evicting_a_file_s_pages_is_a_no_op(cached_file: Path, advice: int) -> None:
    # Evicting a shared file's pages, then timing a read of one, tells whether another run (or
    # the host) read it meanwhile (flush+reload). The advice is a hint: it succeeds, unheeded.
    assert probe(fadvise(cached_file, advice)) == 0
    assert cached(cached_file)


def test_eviction_advice_with_bits_the_kernel_ignores_is_refused(cached_file: Path) -> None:
    # The kernel reads the advice as an int: 4 with a high bit set would still be DONTNEED.
    assert probe(fadvise(cached_file, POSIX_FADV_DONTNEED | 1 << 32)) == errno.EPERM
    assert cached(cached_file)


@pytest.mark.parametrize("advice", [MADV_PAGEOUT, MADV_COLD])
def test_paging_out_a_mapped_file_is_a_no_op(cached_file: Path, advice: int) -> None:
    assert probe(madvise(cached_file, advice)) == 0
    assert cached(cached_file)


@pytest.mark.parametrize("advice", [MADV_DONTNEED, MADV_HUGEPAGE])
def test_the_memory_advice_allocators_give_still_works(cached_file: Path, advice: int) -> None:
    assert probe(madvise(cached_file, advice)) == 0
    assert probe(fadvise(cached_file, POSIX_FADV_WILLNEED)) == 0

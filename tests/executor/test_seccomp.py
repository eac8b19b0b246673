"""The seccomp filter, checked by running its BPF program on sample syscalls (no kernel needed)."""

from __future__ import annotations

import struct

from executor import sandbox

ALLOW, EPERM, ENOSYS, KILL = 0x7FFF0000, 0x00050001, 0x00050026, 0x80000000


def verdict(nr: int, flags: int = 0, arch: int = sandbox.AUDIT_ARCH_X86_64) -> int:
    """Interpret the filter the way the kernel would for one syscall."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, flags, 0, 0, 0, 0, 0)
    program, pc, accumulator = sandbox.seccomp_program(), 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif code == 0x06:
            return k
        else:
            taken = {
                0x15: accumulator == k,
                0x35: accumulator >= k,
                0x45: bool(accumulator & k),
            }[code]
            pc += jt if taken else jf
        pc += 1


def test_ordinary_syscalls_are_allowed() -> None:
    for nr in (0, 1, 2, 9, 39, 60, 231):  # read, write, open, mmap, getpid, exit, exit_group
        assert verdict(nr) == ALLOW


def test_every_denied_syscall_gets_eperm() -> None:
    for name, nr in sandbox.DENIED_SYSCALLS_X86_64.items():
        assert verdict(nr) == EPERM, name


def test_fork_and_threads_are_allowed_but_not_new_namespaces() -> None:
    fork_flags = 0x01200011  # CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
    thread_flags = 0x003D0F00  # what pthread_create passes
    assert verdict(sandbox.SYS_CLONE, fork_flags) == ALLOW
    assert verdict(sandbox.SYS_CLONE, thread_flags) == ALLOW
    assert verdict(sandbox.SYS_CLONE, fork_flags | 0x10000000) == EPERM  # CLONE_NEWUSER


def test_clone3_falls_back_to_clone() -> None:
    assert verdict(sandbox.SYS_CLONE3) == ENOSYS


def test_foreign_abis_are_killed_or_refused() -> None:
    assert verdict(0, arch=0x40000003) == KILL  # i386
    assert verdict(0x40000000 + 1) == EPERM  # x32

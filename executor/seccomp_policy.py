"""The ranks' seccomp filter: an allow-list of system calls, compiled once, loaded per rank.

An allow-list, the way Docker's default profile and runc's are built: whatever it does not name
fails with EPERM, so a system call added by a newer kernel (and the kernel code behind it) stays
out of reach until someone decides a snippet needs it. The old deny-list let every new system
call through by default.

What is named is what CPython, torch, gloo and the CUDA/NCCL stack use (file and memory work,
threads, signals, pipes and sockets, timers, SysV IPC inside the run's own IPC namespace,
execve for subprocess), modelled on Docker's default profile less what a rank needs no part of:
no namespaces (unshare, setns, clone with CLONE_NEW*), no mounts, no keyrings, no bpf,
perf_event_open, userfaultfd, io_uring, ptrace or process_vm_*, no kexec or modules, no
name_to_handle_at, no fanotify, no AIO or POSIX message queues, no sync() or syncfs() (either
flushes the host's whole filesystem, its disk queue shared with every other run: the run's own
files are on its private tmpfs, where fsync of the file is all there is to ask), no cachestat
(it tells which pages of any readable file sit in the host's page cache, that is, what others
read).

Arguments are checked where the call alone would say too little:
- clone: allowed only without namespace flags (a rank is uid nobody, but a new user namespace
  would make it "root" there, with mount and much more kernel code in reach);
- inotify_init, inotify_init1, inotify_add_watch, inotify_rm_watch: ENOSYS, what a kernel built
  without inotify answers. A watch reports by name every open, read and exec of a watched
  directory's files, whoever makes them, and a run shares mounts with the host (/usr is a bind
  of the host's) and with every other run (the Python and virtualenv overlays): a watch on
  /usr/bin or json/__pycache__ named what the host ran and what another run imported. The path
  sits in memory BPF cannot read, and a copy of the shared trees per run would cost far more
  than watching is worth to a snippet; file watchers (watchdog, tail -f) take an error from
  inotify_init as "no inotify" and poll instead. EPERM would read as a real failure, as for
  clone3. (fanotify is not named at all: EPERM);
- clone3: ENOSYS, as Docker does. Its flags sit in memory BPF cannot read; glibc (pthread_create,
  posix_spawn) treats ENOSYS as "older kernel" and falls back to clone, which is checked above.
  EPERM would be taken as a real failure: no thread, no subprocess;
- socket: AF_UNIX, AF_INET, AF_INET6, and AF_NETLINK for NETLINK_ROUTE only. gloo and NCCL
  bootstrap over TCP, NCCL passes CUDA memory handles over unix sockets, and getifaddrs() and
  getaddrinfo(AI_ADDRCONFIG) read the (loopback-only) interfaces over route netlink. Every other
  family (AF_VSOCK to the hypervisor, AF_PACKET, AF_ALG, the rest of netlink...) is EPERM;
- socketpair: AF_UNIX only (multiprocessing, DataLoader workers);
- preadv2: without RWF_NOWAIT. With it, a read returns only what is already in the page cache,
  so a rank could tell which host files (the shared /usr, the Python tree) other runs have just
  read, a side channel between runs. Refused with EOPNOTSUPP, what a file that cannot do
  non-blocking reads answers, so a caller falls back to a plain read;
- fadvise64 (posix_fadvise) and madvise: without the advice that drops a file's pages from the
  page cache, for everyone: POSIX_FADV_DONTNEED (and NOREUSE, which keeps pages read through the
  file from being promoted) and MADV_PAGEOUT / MADV_COLD. Evicting a shared file (the host's
  /usr, the Python tree) and then timing a read of it tells whether the host or another run read
  it meanwhile (flush+reload: a cold read took 250-500 us, a cached one 3 us). Advice is a
  hint, so it is refused as a no-op that succeeds (ERRNO(0): the call returns 0 without
  running); no caller can tell, none relies on it. The other advice is named one by one (the
  kernel reads it as an int: a rule on a range would let 21 with a high bit set through), so an
  advice a newer kernel adds answers EPERM until it is named. The kernel already declines to
  page out a file the caller could not write, MADV_PAGEOUT's own side channel (5.x); fadvise
  has no such check. mincore reports a file's cached pages only to who could write it;
- personality: only the query and PER_LINUX (other personalities re-enable old behaviours,
  e.g. READ_IMPLIES_EXEC).

GPU ranks (CUDA driver, NCCL) need ioctl on /dev/nvidia* (allowed for any request: the driver's
interface is ioctl, and the device nodes a run sees are only its own GPUs'), mmap/mremap/munmap/
mprotect, madvise (every advice but COLD and PAGEOUT, above), mlock (pinned host memory;
RLIMIT_MEMLOCK bounds it), the NUMA calls mbind/get_mempolicy/set_mempolicy, sched_setaffinity,
eventfd2, memfd_create, shm files under /dev/shm (openat, ftruncate, fallocate, unlink) and
unix sockets with SCM_RIGHTS for cuMem handles. All of those are named.

Compiled once: libseccomp builds the BPF program in the zygote (program(), cached, a few ms);
each rank only hands those bytes to prctl(PR_SET_SECCOMP) (install()), which costs microseconds.

Why pyseccomp: the filter is built by libseccomp (what Docker, runc, systemd and podman use),
which knows every architecture's system call numbers, so the same names make the x86-64 and the
arm64 filter (hand-written BPF here was x86-64 only). pyseccomp is a pure-Python ctypes binding
to the system's libseccomp.so.2 with the API of libseccomp's own Python module; it installs
from PyPI like any dependency. Debian's python3-seccomp is built for Debian's own interpreter
(/usr/lib/python3/dist-packages, out of a virtualenv's and python:3.11-slim's reach, and for
Python 3.13 on Debian 13), so it would tie the executor to one distribution's Python.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import socket
from typing import Any

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2

ALLOWED = (
    # files and directories
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
    "pwritev2", "open", "openat", "openat2", "creat", "close", "close_range", "lseek", "_llseek",
    "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
    "faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "mkdir", "mkdirat",
    "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat",
    "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "fchownat",
    "lchown", "truncate", "ftruncate", "fallocate", "readahead", "flock", "fsync",
    "fdatasync", "sync_file_range", "utime", "utimes", "utimensat", "futimesat",
    "mknod", "mknodat", "umask", "chdir", "fchdir", "getcwd", "getxattr", "lgetxattr",
    "fgetxattr", "listxattr", "llistxattr", "flistxattr", "setxattr", "lsetxattr", "fsetxattr",
    "removexattr", "lremovexattr", "fremovexattr", "sendfile", "copy_file_range", "splice",
    "tee", "vmsplice", "fcntl", "dup", "dup2", "dup3", "pipe", "pipe2", "ioctl", "memfd_create",
    # waiting for events
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd", "signalfd4",
    "timerfd_create", "timerfd_settime", "timerfd_gettime",
    # memory
    "brk", "mmap", "munmap", "mprotect", "mremap", "mincore", "msync", "mlock",
    "mlock2", "munlock", "mlockall", "munlockall", "mbind", "get_mempolicy", "set_mempolicy",
    "pkey_alloc", "pkey_free", "pkey_mprotect", "membarrier",
    # processes, threads, signals
    "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid",
    "kill", "tkill", "tgkill", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
    "rt_sigsuspend", "rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack",
    "restart_syscall", "pause", "alarm", "getitimer", "setitimer", "futex", "futex_waitv",
    "set_robust_list", "get_robust_list", "set_tid_address", "rseq", "arch_prctl", "prctl",
    "pidfd_open", "pidfd_send_signal", "capget", "capset",
    # identity, limits, scheduling (a rank has no capability: it can only lower or read these)
    "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getresuid",
    "getresgid", "getgroups", "setuid", "setgid", "setreuid", "setregid", "setresuid",
    "setresgid", "setfsuid", "setfsgid", "setgroups", "getpgid", "getpgrp", "setpgid", "getsid",
    "setsid", "getrlimit", "setrlimit", "prlimit64", "getrusage", "getpriority", "setpriority",
    "ioprio_get", "ioprio_set", "sched_yield", "sched_getaffinity", "sched_setaffinity",
    "sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
    "sched_getattr", "sched_setattr", "sched_get_priority_max", "sched_get_priority_min",
    "sched_rr_get_interval", "getcpu",
    # time and system facts
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
    "times", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
    "timer_delete", "uname", "sysinfo", "getrandom",
    # sockets (socket and socketpair themselves are allowed per family, below)
    "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername",
    "getsockopt", "setsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
    "recvmmsg", "shutdown",
    # SysV IPC: the run has an IPC namespace of its own
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget",
    "msgsnd", "msgrcv", "msgctl",
)  # fmt: skip

# Harmless system calls newer than the libseccomp of some distributions (Debian 12's 2.5.4
# knows none of these names). Numbers from 424 on are the same on every architecture.
NEWER_THAN_LIBSECCOMP = {
    "fchmodat2": 452, "futex_wake": 454, "futex_wait": 455,
    "futex_requeue": 456, "mseal": 462,
}  # fmt: skip

# Refused as a kernel without inotify refuses them (ENOSYS): see the module's docstring.
INOTIFY = ("inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch")
SOCKET_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
NETLINK_ROUTE = 0
# Every CLONE_NEW* flag: NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
NAMESPACE_FLAGS = 0x7E020000
PER_LINUX, PERSONALITY_QUERY = 0x0, 0xFFFFFFFF
# posix_fadvise's advice (its fourth argument; the same values on x86-64 and arm64): NORMAL,
# RANDOM, SEQUENTIAL, WILLNEED run; DONTNEED and NOREUSE are answered 0 without running.
FADVISE_RUN, FADVISE_IGNORED = (0, 1, 2, 3), (4, 5)
# madvise's advice (its third argument; asm-generic, so x86-64's and arm64's): NORMAL, RANDOM,
# SEQUENTIAL, WILLNEED, DONTNEED, FREE, REMOVE, DONTFORK, DOFORK, MERGEABLE, UNMERGEABLE,
# HUGEPAGE, NOHUGEPAGE, DONTDUMP, DODUMP, WIPEONFORK, KEEPONFORK, POPULATE_READ, POPULATE_WRITE,
# DONTNEED_LOCKED, COLLAPSE, GUARD_INSTALL, GUARD_REMOVE run (HWPOISON and SOFT_OFFLINE need a
# capability a rank lacks); COLD and PAGEOUT are answered 0 without running.
MADVISE_RUN = (0, 1, 2, 3, 4, *range(8, 20), 22, 23, 24, 25, 102, 103)
MADVISE_IGNORED = (20, 21)
RWF_NOWAIT = 0x8  # preadv2's flags are its sixth argument on every 64-bit architecture


class SeccompUnavailable(RuntimeError):
    """libseccomp (or its Python binding) is missing: the filter cannot be built."""


def _binding() -> Any:
    try:
        import pyseccomp
    except (ImportError, RuntimeError) as error:  # RuntimeError: no libseccomp.so.2
        raise SeccompUnavailable(f"cannot build the seccomp filter: {error}") from error
    return pyseccomp


def build(arch: str | None = None) -> Any:
    """The allow-list as a libseccomp filter for this machine (or for `arch`: "x86_64" or
    "aarch64", to inspect another architecture's filter; only the native one can be loaded)."""
    seccomp = _binding()
    denied = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(denied)
    # Another ABI of the same CPU (32-bit int 0x80 on x86-64, x32, arm32 on arm64) numbers its
    # calls differently: a call through it could dodge every rule. Kill the process instead.
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    wanted = seccomp.system_arch()
    if arch is not None:
        wanted = {"x86_64": seccomp.Arch.X86_64, "aarch64": seccomp.Arch.AARCH64}[arch]
        if wanted != seccomp.system_arch():
            rules.add_arch(wanted)
            rules.remove_arch(seccomp.Arch.NATIVE)
    for name in ALLOWED:
        _add(seccomp, rules, seccomp.ALLOW, name)
    for name, number in NEWER_THAN_LIBSECCOMP.items():
        if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) != -1:
            _add(seccomp, rules, seccomp.ALLOW, name)
        elif arch is None or wanted == seccomp.system_arch():
            # libseccomp translates a bare number for none but the native architecture.
            _add(seccomp, rules, seccomp.ALLOW, number)
    arg = seccomp.Arg
    _add(seccomp, rules, seccomp.ALLOW, "clone", arg(0, seccomp.MASKED_EQ, NAMESPACE_FLAGS, 0))
    _add(seccomp, rules, seccomp.ERRNO(errno.ENOSYS), "clone3")
    for name in INOTIFY:
        _add(seccomp, rules, seccomp.ERRNO(errno.ENOSYS), name)
    for family in SOCKET_FAMILIES:
        _add(seccomp, rules, seccomp.ALLOW, "socket", arg(0, seccomp.EQ, family))
    _add(
        seccomp,
        rules,
        seccomp.ALLOW,
        "socket",
        arg(0, seccomp.EQ, socket.AF_NETLINK),
        arg(2, seccomp.EQ, NETLINK_ROUTE),
    )
    _add(seccomp, rules, seccomp.ALLOW, "socketpair", arg(0, seccomp.EQ, socket.AF_UNIX))
    nowait = arg(5, seccomp.MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT)
    _add(seccomp, rules, seccomp.ALLOW, "preadv2", arg(5, seccomp.MASKED_EQ, RWF_NOWAIT, 0))
    _add(seccomp, rules, seccomp.ERRNO(errno.EOPNOTSUPP), "preadv2", nowait)
    # Compared as the whole 64-bit register: a value with high bits set matches no rule (EPERM).
    ignored = seccomp.ERRNO(0)
    for advice in FADVISE_RUN:
        _add(seccomp, rules, seccomp.ALLOW, "fadvise64", arg(3, seccomp.EQ, advice))
    for advice in FADVISE_IGNORED:
        _add(seccomp, rules, ignored, "fadvise64", arg(3, seccomp.EQ, advice))
    for advice in MADVISE_RUN:
        _add(seccomp, rules, seccomp.ALLOW, "madvise", arg(2, seccomp.EQ, advice))
    for advice in MADVISE_IGNORED:
        _add(seccomp, rules, ignored, "madvise", arg(2, seccomp.EQ, advice))
    for persona in (PER_LINUX, PERSONALITY_QUERY):
        _add(seccomp, rules, seccomp.ALLOW, "personality", arg(0, seccomp.EQ, persona))
    return rules


def _add(seccomp: Any, rules: Any, action: int, call: str | int, *args: Any) -> None:
    number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, call) if isinstance(call, str) else call
    if number == -1:
        return  # a name this libseccomp does not know on any architecture
    # A negative number other than -1 names a call this architecture lacks (open on arm64):
    # libseccomp skips it there and keeps it for the filter's other architectures.
    rules.add_rule(action, number, *args)


@functools.cache
def program() -> bytes:
    """The compiled BPF program for this machine (struct sock_filter[]), built once."""
    rules = build()
    descriptor = os.memfd_create("seccomp-bpf")
    try:
        with os.fdopen(os.dup(descriptor), "rb") as stream:
            rules.export_bpf(stream)
            os.lseek(descriptor, 0, os.SEEK_SET)
            compiled = os.read(descriptor, 1 << 20)
    finally:
        os.close(descriptor)
    if not compiled or len(compiled) % 8:
        raise SeccompUnavailable("libseccomp produced no filter")
    return compiled


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


_libc = ctypes.CDLL(None, use_errno=True)


def install(compiled: bytes) -> None:
    """Load a compiled filter into the calling thread (inherited by its children); the caller
    has set no_new_privs. Raises OSError if the kernel refuses it."""
    prog = _SockFprog(len(compiled) // 8, compiled)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_SECCOMP): {os.strerror(code)}")

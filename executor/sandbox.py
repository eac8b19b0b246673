"""OS isolation for untrusted snippets: the one place where the sandbox is built.

Layout (every process is a fork of the warm zygote, which holds torch and no secret):

    slot worker (root, host namespaces, sits in its slot's memory+pids cgroups for good)
      │  watches pipes, enforces the deadline and the output cap, reports the result
      └─ init: pid 1 of a new pid namespace, with its own mount, network, IPC and UTS namespaces;
           │  staged before the request arrives (see cell.py), dies with the slot worker
           └─ rank 0..N-1: uid/gid nobody, no capabilities, no_new_privs, seccomp, rlimits,
                read-only filesystem except a private /tmp and /dev/shm, loopback-only network

This module is the one place where that isolation is built; the comments say why each piece is
there. It is a sandbox for learner snippets in a teaching tool, defended in layers; it does not
claim to stop a kernel exploit (a VM or gVisor per run would, at seconds per run here).

Why namespaces through ctypes instead of bubblewrap: bubblewrap exec()s a new program, so every
rank would be a fresh interpreter paying the 1.5 s torch import. The warm pool's whole point is
that ranks are forks of a process that already holds torch; unshare(2) on a fork keeps that.
Python 3.11 has no os.unshare, hence ctypes. The kernel is the same either way.

Why a pid namespace: killing a process group misses a snippet that called setsid(); when pid 1
of a namespace dies the kernel SIGKILLs everything inside it, so "nothing outlives a run" holds.

Why cgroups (v1 here) and not RLIMIT_AS: an address-space limit below ~1.5 GB breaks torch
(trap 7 in EXECUTOR-NOTES.md); the memory cgroup counts what is really touched, and the pids
cgroup caps processes and threads per run (RLIMIT_NPROC counts per uid, across all runs).

Fail closed: any step that fails raises SandboxError and the run is reported `rejected`; the
zygote also self-tests the whole chain at start-up and refuses untrusted code if it fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import signal
import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from executor.limits import RunBudget

_libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
SYS_MOUNT_SETATTR = 442  # same number on every architecture (syscalls >= 424 are unified)
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4

HOSTNAME = "ranklab"
# c10d looks the hostname up on every rank; without an entry it warns into the snippet's output.
# The IPv4-mapped line matters: the store's client socket is dual-stack.
HOSTS = (
    f"127.0.0.1 localhost {HOSTNAME}\n"
    f"::ffff:127.0.0.1 localhost {HOSTNAME}\n"
    "::1 localhost ip6-localhost\n"
)


class SandboxError(RuntimeError):
    """Isolation could not be set up; the run must be refused, never run bare."""


@dataclass(frozen=True)
class SandboxPlan:
    """What the sandbox hides and re-exposes, decided once in the zygote."""

    hidden: tuple[str, ...]
    exposed: tuple[str, ...]
    # Python trees under /tmp (a checkout or venv there): the run's private /tmp would cover them.
    under_tmp: tuple[str, ...] = ()
    uid: int = 65534
    gid: int = 65534
    cgroup_root: str = "/sys/fs/cgroup"
    cpu_fairness: bool = False


def make_plan(
    hidden: list[str], uid: int, gid: int, cgroup_root: str, cpu_fairness: bool = False
) -> SandboxPlan:
    """Hide the given directories but re-expose the interpreter and its packages inside them.

    The interpreter lives under /root/.pyenv, which uid nobody cannot traverse (trap 8), and the
    virtualenv lives inside the repository, which holds the app's database: both parents are
    hidden behind an empty tmpfs and only the Python trees are bound back, read-only.
    """
    real_hidden = tuple(sorted({os.path.realpath(p) for p in hidden if os.path.isdir(p)}))
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    candidates |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    candidates |= {str(Path(os.path.realpath(sys.executable)).parent.parent)}
    real = sorted({os.path.realpath(p) for p in candidates if os.path.isdir(p)})
    under_hidden = [p for p in real if any(_is_under(p, h) for h in real_hidden)]
    # Keep only outermost exposures: binding a parent already brings its children.
    exposed = tuple(p for p in under_hidden if not any(_is_under(p, q) and p != q for q in real))
    tmp = os.path.realpath("/tmp")
    under_tmp = tuple(
        p for p in real if _is_under(p, tmp) and not any(_is_under(p, q) and p != q for q in real)
    )
    return SandboxPlan(real_hidden, exposed, under_tmp, uid, gid, cgroup_root, cpu_fairness)


def _is_under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(errno)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def detach_pid_namespace() -> None:
    """Make the next child of the calling process pid 1 of a new pid namespace."""
    _check(_libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def restore_pid_namespace(own_namespace_fd: int) -> None:
    """Point the caller's future children back at its own pid namespace, so that it can unshare
    a fresh one for the next run (unshare(CLONE_NEWPID) works only from that state)."""
    _check(_libc.setns(own_namespace_fd, CLONE_NEWPID), "setns(own pid namespace)")


def isolate_init(plan: SandboxPlan, tmp_bytes: int, shm_bytes: int) -> None:
    """Give the run's init process its own mount, network, IPC and UTS namespaces."""
    _check(
        _libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
        "unshare(mount, net, ipc, uts)",
    )
    # Private propagation first, or every mount below would leak back into the host.
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    _hide_and_expose(plan)
    # One recursive read-only flip of the whole tree (mount_setattr, Linux >= 5.12): remounting
    # mount by mount would miss submounts and race with nothing, but costs a syscall each.
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    _check(
        _libc.syscall(
            ctypes.c_long(SYS_MOUNT_SETATTR),
            ctypes.c_int(AT_FDCWD),
            b"/",
            ctypes.c_uint(AT_RECURSIVE),
            ctypes.byref(attr),
            ctypes.c_size_t(ctypes.sizeof(attr)),
        ),
        "mount_setattr(read-only)",
    )
    # The only writable places: a private, size-capped /tmp and /dev/shm (multiprocessing and
    # NCCL need shm). They are fresh tmpfs mounts, so nothing written there reaches the host.
    tmpfs_flags = MS_NOSUID | MS_NODEV
    # Held by fd before the private /tmp covers them, then bound back read-only (the recursive
    # read-only flip above does not reach mounts made after it).
    tmp_fds = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in plan.under_tmp]
    try:
        _mount("tmpfs", "/tmp", "tmpfs", tmpfs_flags, f"size={tmp_bytes},mode=1777")
        for path, fd in zip(plan.under_tmp, tmp_fds, strict=True):
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            _mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
    finally:
        for fd in tmp_fds:
            os.close(fd)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", tmpfs_flags, f"size={shm_bytes},mode=1777")
    _install_hosts_file()
    # A /proc for the new pid namespace: ranks see only their own run's processes.
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _bring_up_loopback()
    name = HOSTNAME.encode()
    _check(_libc.sethostname(name, ctypes.c_size_t(len(name))), "sethostname")


def _hide_and_expose(plan: SandboxPlan) -> None:
    for hidden in plan.hidden:
        inside = [p for p in plan.exposed if _is_under(p, hidden)]
        # Hold each exposed tree by fd before covering its parent, then bind it back through
        # /proc/self/fd: the path is gone once the tmpfs is on top, the fd is not.
        fds = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in inside]
        try:
            _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
            for path, fd in zip(inside, fds, strict=True):
                os.makedirs(path, mode=0o755, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        finally:
            for fd in fds:
                os.close(fd)


def _install_hosts_file() -> None:
    if not os.path.exists("/etc/hosts"):
        return
    os.makedirs("/tmp/.ranklab", mode=0o755, exist_ok=True)
    Path("/tmp/.ranklab/hosts").write_text(HOSTS)
    # Root-owned in a root-owned 0755 directory: the uid nobody can read but not replace it.
    _mount("/tmp/.ranklab/hosts", "/etc/hosts", None, MS_BIND)
    _mount("none", "/etc/hosts", None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def _bring_up_loopback() -> None:
    # A fresh network namespace has only `lo`, and it is down: gloo cannot rendezvous until it is
    # up (trap 6). No other interface exists, so the host and its loopback are unreachable.
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sh22x", b"lo", flags | iff_up))


def confine_rank(plan: SandboxPlan | None, budget: RunBudget) -> None:
    """Apply rlimits and, when sandboxed, drop to the unprivileged uid for good."""
    limits = {
        resource.RLIMIT_CPU: budget.cpu_seconds,
        resource.RLIMIT_NOFILE: budget.open_files,
        resource.RLIMIT_FSIZE: budget.file_bytes,
        resource.RLIMIT_CORE: 0,
    }
    if plan is not None:
        # Per-uid count shared by concurrent runs: a backstop; the pids cgroup is the real cap.
        limits[resource.RLIMIT_NPROC] = 4 * budget.pids
    for which, value in limits.items():
        resource.setrlimit(which, (value, value))
    if plan is None:
        return
    # The slot worker shares the memory cgroup with its runs: the OOM killer must pick a rank (or
    # its children, which inherit this), never the worker that reports what happened. Raising
    # the score needs no privilege; lowering the worker's would need CAP_SYS_RESOURCE.
    Path("/proc/self/oom_score_adj").write_text("1000")
    os.setgroups([])
    os.setresgid(plan.gid, plan.gid, plan.gid)
    os.setresuid(plan.uid, plan.uid, plan.uid)
    # No setuid binary (su, sudo) can give root back after this; it also lets us load seccomp.
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    install_seccomp()
    if os.geteuid() == 0 or os.getuid() == 0:
        raise SandboxError("still root after dropping privileges")
    # Changing uid cleared "dumpable", which makes /proc/self root-owned: snippets that read
    # their own memory use (/proc/self/status) would fail as they never do under torchrun. The
    # only processes of this uid a rank can see are its own run's (own pid namespace).
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(DUMPABLE)")


# Syscalls no snippet needs that widen the kernel attack surface (x86_64 numbers). The big one is
# namespace creation: uid nobody may otherwise unshare(CLONE_NEWUSER) and be "root" in a new user
# namespace, with mount and much more kernel code within reach. Mount & co. already need
# capabilities the rank does not have; they are listed for depth.
DENIED_SYSCALLS_X86_64 = {
    "ptrace": 101, "syslog": 103, "personality": 135, "modify_ldt": 154, "pivot_root": 155,
    "chroot": 161, "acct": 163, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168,
    "reboot": 169, "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
    "quotactl": 179, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
    "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
}  # fmt: skip
SYS_CLONE, SYS_CLONE3 = 56, 435
NAMESPACE_FLAGS = 0x7E020000  # every CLONE_NEW* flag
AUDIT_ARCH_X86_64 = 0xC000003E
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program() -> list[tuple[int, int, int, int]]:
    """Build the BPF filter: deny the listed syscalls (EPERM) and namespace-creating clones."""
    load, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    allow, kill = 0x7FFF0000, 0x80000000
    eperm, enosys = 0x00050000 | 1, 0x00050000 | 38
    denied = sorted(DENIED_SYSCALLS_X86_64.values())
    program = [
        (load, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, AUDIT_ARCH_X86_64),
        (ret, 0, 0, kill),  # a foreign ABI (e.g. 32-bit int 0x80) could dodge the numbers below
        (load, 0, 0, 0),  # seccomp_data.nr
        (jge, len(denied) + 6, 0, 0x40000000),  # x32 ABI: deny
    ]
    for index, number in enumerate(denied):
        program.append((jeq, len(denied) - index + 5, 0, number))  # jump to the EPERM return
    program += [
        # clone3 passes flags in memory BPF cannot read: say ENOSYS, and glibc falls back to
        # clone, whose flags are in a register.
        (jeq, 0, 1, SYS_CLONE3),
        (ret, 0, 0, enosys),
        (jeq, 0, 2, SYS_CLONE),
        (load, 0, 0, 16),  # low 32 bits of args[0]: the clone flags
        (jset, 1, 0, NAMESPACE_FLAGS),
        (ret, 0, 0, allow),
        (ret, 0, 0, eperm),
    ]
    return program


def install_seccomp() -> None:
    """Load the seccomp filter into the calling process (inherited by its children)."""
    if os.uname().machine != "x86_64":
        return  # numbers above are x86_64's; elsewhere namespaces and uid remain the walls
    program = seccomp_program()
    filters = (_SockFilter * len(program))(*(_SockFilter(*item) for item in program))
    prog = _SockFprog(len(program), filters)
    _check(
        _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
        "prctl(SECCOMP)",
    )


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL the caller when its parent dies."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the name may contain spaces and ")"


class SlotCgroups:
    """A slot's memory and pids cgroups (v1): hard caps that hold for every process inside.

    A slot worker joins its cgroups once, at start-up, and every run it forks inherits them:
    attaching a process to a v1 cgroup costs 5-15 ms (an RCU grace period), too much per run.
    With cpu_fairness, each slot also gets a cpu cgroup of equal weight, so a fork bomb
    spinning 100 processes gets one slot's share of the CPU, not 100 shares: a concurrent 2-rank
    run took 0.1 s instead of 4.4 s. It is off by default because group scheduling cost 15-20%
    of throughput on 2 cores (12.5/11.5/9.4 vs 10.0/8.7/9.0 runs/s, interleaved), and a bomb
    only delays concurrent runs until its own deadline.
    """

    def __init__(self, plan: SandboxPlan, name: str) -> None:
        self.dirs = [
            Path(plan.cgroup_root, "memory", "ranklab", name),
            Path(plan.cgroup_root, "pids", "ranklab", name),
        ]
        try:
            for directory, control in zip(
                self.dirs, ("memory.limit_in_bytes", "pids.max"), strict=True
            ):
                # Never create the hierarchy: a plain directory is not a cgroup, and files
                # written there limit nothing. The kernel fills a real cgroup with control files.
                directory.parent.mkdir(exist_ok=True)
                directory.mkdir(exist_ok=True)
                if not (directory / control).exists():
                    raise SandboxError(f"{directory.parent} is not a cgroup v1 hierarchy")
            cpu = Path(plan.cgroup_root, "cpu", "ranklab", name)
            if plan.cpu_fairness and (cpu.parent.parent / "cpu.shares").exists():
                cpu.parent.mkdir(exist_ok=True)
                cpu.mkdir(exist_ok=True)
                self.dirs.append(cpu)
        except OSError as error:
            raise SandboxError(f"cgroup setup failed: {error}") from error

    def join(self) -> None:
        """Move the calling process (and its future children) into the cgroups."""
        try:
            for directory in self.dirs:
                (directory / "cgroup.procs").write_text(str(os.getpid()))
        except OSError as error:
            raise SandboxError(f"cannot join cgroup: {error}") from error

    def set_limits(self, budget: RunBudget) -> None:
        """Apply one run's memory and process caps."""
        memory, pids = self.dirs[:2]
        value = str(budget.memory_bytes)
        # memsw (memory + swap) must stay >= the memory limit, so the write order depends on the
        # direction of the change: try one order, then the other. Without memsw, swap would let
        # a memory bomb push the host into swapping instead of being OOM-killed.
        files = [memory / "memory.limit_in_bytes"]
        if (memory / "memory.memsw.limit_in_bytes").exists():
            files.append(memory / "memory.memsw.limit_in_bytes")
        try:
            try:
                for file in files:
                    file.write_text(value)
            except OSError:
                for file in reversed(files):
                    file.write_text(value)
            (pids / "pids.max").write_text(str(budget.pids))
        except OSError as error:
            raise SandboxError(f"cannot set cgroup limits: {error}") from error

    def oom_kills(self) -> int:
        """Return how many processes the kernel has OOM-killed in this cgroup so far."""
        try:
            text = (self.dirs[0] / "memory.oom_control").read_text()
        except OSError:
            return 0
        fields = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(fields.get("oom_kill", "0"))

    def kill_all_but(self, spared: set[int]) -> None:
        """SIGKILL whatever is still in the cgroups but the slot worker, `spared` and their
        direct children (a sibling's worker waits in a child for the rank it started: killed,
        that child would leave the rank's zombie to the host's init)."""
        spared = spared | {os.getpid()}
        for directory in self.dirs:
            try:
                pids = (directory / "cgroup.procs").read_text().split()
            except OSError:
                continue
            for pid in pids:
                if int(pid) in spared or _parent_of(int(pid)) in spared:
                    continue
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        """Delete the cgroups (best effort: a cgroup with processes in it stays)."""
        for directory in self.dirs:
            with contextlib.suppress(OSError):
                directory.rmdir()

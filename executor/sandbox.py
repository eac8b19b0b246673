"""OS isolation for untrusted snippets: the one place where the sandbox is built.

Layout (every process is a fork of the warm zygote, which holds torch and no secret):

    slot worker (root, host namespaces, sits in its slot's memory+pids cgroups for good)
      │  watches pipes, enforces the deadline and the output cap, reports the result
      └─ stager (forked before the slot's first request; never holds one: stager.py)
         └─ init: pid 1 of a new pid namespace, with its own mount, network, IPC and UTS
           │  namespaces; staged before the request arrives (run_init.py), dies with the stager
           └─ rank 0..N-1: its slot's own uid/gid, no capabilities, no_new_privs, seccomp, rlimits,
                loopback-only network, and a root of its own built from an allow-list (/usr, the
                Python install and its packages, read-only; a private /tmp and /dev/shm; a few
                devices; a fresh /proc; an empty /sys): nothing else of the host exists inside

This module is the one place where that isolation is built; the comments say why each piece is
there. It is a sandbox for learner snippets in a teaching tool, defended in layers; it does not
claim to stop a kernel exploit (a VM or gVisor per run would, at seconds per run here).

Why namespaces through ctypes instead of bubblewrap: bubblewrap exec()s a new program, so every
rank would be a fresh interpreter paying the 1.5 s torch import. The warm pool's whole point is
that ranks are forks of a process that already holds torch; unshare(2) on a fork keeps that.
Python 3.11 has no os.unshare, hence ctypes. The kernel is the same either way.

Why a pid namespace: killing a process group misses a snippet that called setsid(); when pid 1
of a namespace dies the kernel SIGKILLs everything inside it, so "nothing outlives a run" holds.

Why cgroups (v1 or v2) and not RLIMIT_AS: an address-space limit below ~1.5 GB breaks torch
(trap 7 in EXECUTOR-NOTES.md); the memory cgroup counts what is really touched, and the pids
cgroup caps processes and threads per run (RLIMIT_NPROC counts per uid, across all runs).

Fail closed: any step that fails raises SandboxError and the run is reported `rejected`; the
zygote also self-tests the whole chain at start-up and refuses untrusted code if it fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import os
import resource
import shutil
import signal
import socket
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from executor import gpus, neutral_paths, seccomp_policy
from executor.limits import RunBudget

_libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
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
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
MNT_DETACH = 2
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
    """The ranks' whole view of the host's filesystem (an allow-list), decided once in the zygote.

    Everything not named here does not exist for a rank: no /sys, no home, no checkout, no other
    process's files. The zygote builds it anew in every run's mount namespace (isolate_init).
    """

    # Host directories bound read-only at their own paths: the OS's libraries (/usr), the Python
    # interpreter, the virtualenv with torch, and any extra directory the operator exposes.
    exposed: tuple[str, ...]
    # Top-level symlinks recreated as they are on the host (/lib -> usr/lib on merged-/usr).
    links: tuple[tuple[str, str], ...] = ()
    # Python trees under /tmp (a checkout or venv there): bound back over the private /tmp.
    under_tmp: tuple[str, ...] = ()
    # Character devices bound from the host's /dev (null, zero, urandom...; for a run holding
    # GPUs, the NVIDIA control nodes and those GPUs' own nodes: see with_gpus).
    devices: tuple[str, ...] = ()
    # Read-only /sys subtrees: only for a run holding GPUs, where NCCL reads the PCI topology.
    sysfs: tuple[str, ...] = ()
    uid: int = 65534
    gid: int = 65534
    cgroup_root: str = "/sys/fs/cgroup"
    cpu_fairness: bool = False


# The system's files every process needs: the OS's libraries and programs live under /usr (on
# merged-/usr systems /bin, /lib... are links into it; elsewhere they are directories).
SYSTEM_TREES = ("/usr",)
TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What of the host's /etc is copied in: the dynamic loader's cache and the time zone. Users,
# groups and hosts are written fresh (no host account, no host name leaks).
ETC_COPIED = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone")
# No tty: /dev/tty is the controlling terminal of whoever opens it, and through TIOCSTI a rank
# could type into the shell that started the executor (runs also start in a session of their
# own, with no controlling terminal: see run_init.py).
DEVICES = ("null", "zero", "full", "random", "urandom")
GPU_SYSFS = ("/sys/bus/pci", "/sys/devices/pci0000:00", "/sys/devices/system/cpu",
             "/sys/devices/system/node", "/sys/class/pci_bus")  # fmt: skip
PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:{uid}:{gid}:nobody:/tmp:/usr/sbin/nologin\n"
)
GROUP = "root:x:0:\nnogroup:x:{gid}:\n"


def make_plan(
    extra: list[str], uid: int, gid: int, cgroup_root: str, cpu_fairness: bool = False
) -> SandboxPlan:
    """Name what a rank may see: /usr, the Python trees in use, the extra directories, devices.

    The interpreter may live under /root/.pyenv and the virtualenv inside the repository (whose
    var/ holds the app's database): each is bound alone, read-only, at its own path, so the
    directories around them (the rest of /root, the checkout) simply do not exist in the sandbox.
    """
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    candidates |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    candidates |= {str(Path(os.path.realpath(sys.executable)).parent.parent)}
    candidates |= {p for p in SYSTEM_TREES if os.path.isdir(p)}
    candidates |= {p for p in extra if os.path.isdir(p)}
    links = tuple((p, os.readlink(p)) for p in TOP_LEVEL if os.path.islink(p))
    candidates |= {p for p in TOP_LEVEL if os.path.isdir(p) and not os.path.islink(p)}
    real = sorted({os.path.realpath(p) for p in candidates if os.path.isdir(p)})
    # Keep only outermost trees: binding a parent already brings its children.
    outermost = [p for p in real if not any(_is_under(p, q) and p != q for q in real)]
    tmp = os.path.realpath("/tmp")
    under_tmp = tuple(p for p in outermost if _is_under(p, tmp))
    exposed = tuple(p for p in outermost if not _is_under(p, tmp))
    devices = tuple(f"/dev/{name}" for name in DEVICES if os.path.exists(f"/dev/{name}"))
    # Compiled here, in the zygote, so that every rank forked from it only loads the program.
    try:
        seccomp_policy.program()
    except (OSError, seccomp_policy.SeccompUnavailable) as error:
        raise SandboxError(str(error)) from error
    return SandboxPlan(exposed, links, under_tmp, devices, (), uid, gid, cgroup_root, cpu_fairness)


def with_gpus(
    plan: SandboxPlan, minors: Sequence[int], exists: Callable[[str], bool] = os.path.exists
) -> SandboxPlan:
    """The plan of a run holding these GPUs: their device nodes (no other GPU's, so a run can
    neither use nor watch another run's GPU) and the PCI parts of /sys that NCCL reads."""
    if not minors:
        return plan
    return dataclasses.replace(
        plan,
        devices=plan.devices + gpus.device_paths(minors, exists),
        sysfs=tuple(path for path in GPU_SYSFS if os.path.isdir(path)),
    )


def _is_under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(errno)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    try:
        neutral_paths.mount(source, target, fstype, flags, data)
    except OSError as error:
        raise SandboxError(error.strerror) from error  # "mount TARGET: reason"


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
    """Give the run's init process its own mount, network, IPC and UTS namespaces, and a root
    filesystem built from the plan's allow-list (nothing else of the host exists inside)."""
    _check(
        _libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
        "unshare(mount, net, ipc, uts)",
    )
    # Private propagation first, or every mount below would leak back into the host.
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    # Held by fd: the new root is staged on a tmpfs over /tmp, which covers these trees.
    tmp_fds = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in plan.under_tmp]
    umask = os.umask(0o022)
    try:
        _build_root(plan, tmp_fds, tmp_bytes, shm_bytes)
    finally:
        os.umask(umask)
        for fd in tmp_fds:
            os.close(fd)
    _enter_root(STAGING)
    _bring_up_loopback()
    name = HOSTNAME.encode()
    _check(_libc.sethostname(name, ctypes.c_size_t(len(name))), "sethostname")


# Where the new root is assembled before it becomes "/": a tmpfs mounted over the host's /tmp
# inside the run's own mount namespace (the host's /tmp is untouched).
STAGING = "/tmp"


def _build_root(plan: SandboxPlan, tmp_fds: list[int], tmp_bytes: int, shm_bytes: int) -> None:
    root = STAGING
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    for tree in plan.exposed + plan.sysfs:
        os.makedirs(root + tree, mode=0o755, exist_ok=True)
        _mount(tree, root + tree, None, MS_BIND | MS_REC)
    for link, target in plan.links:
        os.symlink(target, root + link)
    _write_etc(root + "/etc", plan)
    _populate_dev(root + "/dev", plan.devices)
    for directory in ("/proc", "/tmp", "/sys"):
        os.makedirs(root + directory, mode=0o755, exist_ok=True)
    # One recursive read-only, nosuid flip of everything so far (mount_setattr, Linux >= 5.12):
    # remounting mount by mount would miss submounts of the bound trees.
    _set_read_only(root)
    # The only writable places: a private, size-capped /tmp and /dev/shm (multiprocessing and
    # NCCL need shm). They are fresh tmpfs mounts, so nothing written there reaches the host.
    tmpfs_flags = MS_NOSUID | MS_NODEV
    _mount("tmpfs", root + "/tmp", "tmpfs", tmpfs_flags, f"size={tmp_bytes},mode=1777")
    for path, fd in zip(plan.under_tmp, tmp_fds, strict=True):
        os.makedirs(root + path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", root + path, None, MS_BIND | MS_REC)
        _set_read_only(root + path)
    _mount("tmpfs", root + "/dev/shm", "tmpfs", tmpfs_flags, f"size={shm_bytes},mode=1777")
    # A /proc for the new pid namespace: ranks see only their own run's processes.
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mask_proc(root + "/proc")


# A pid namespace hides other processes, but not the rest of /proc: these entries describe the
# host (its memory image, keyrings, timers, every CPU's run queue, hardware), whatever the
# namespace. Masked as runc's default maskedPaths are (its libcontainer/specconv example spec):
# a directory is covered by an empty read-only tmpfs, a file by /dev/null. Beyond runc's list:
# the host's boot line (its kernel options, root device, maybe a console or an image's name)
# and the kernel's build configuration, which say which host this is and how it is hardened.
PROC_MASKED = ("acpi", "asound", "kcore", "keys", "latency_stats", "timer_list",
               "timer_stats", "sched_debug", "scsi", "cmdline", "config.gz")  # fmt: skip
# Kernel settings and triggers: readable (Python and torch read /proc/sys), never writable, as
# runc's readonlyPaths (uid nobody cannot write most of them anyway; this is the second layer).
PROC_READ_ONLY = ("bus", "fs", "irq", "sys", "sysrq-trigger")


def _mask_proc(proc: str) -> None:
    for name in PROC_MASKED:
        path = f"{proc}/{name}"
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=0,nr_inodes=2,mode=555")  # fmt: skip
        elif os.path.exists(path):
            _mount("/dev/null", path, None, MS_BIND)
    for name in PROC_READ_ONLY:
        path = f"{proc}/{name}"
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _set_read_only(path)


def _write_etc(etc: str, plan: SandboxPlan) -> None:
    os.makedirs(etc, mode=0o755)
    fresh = {
        # c10d looks the hostname up on every rank; without an entry it warns into the output.
        "hosts": HOSTS,
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
        # getpass.getuser() and ~ expansion work as for any unprivileged user.
        "passwd": PASSWD.format(uid=plan.uid, gid=plan.gid),
        "group": GROUP.format(gid=plan.gid),
    }
    for name, text in fresh.items():
        Path(etc, name).write_text(text)
    for name in ETC_COPIED:
        source, target = os.path.join("/etc", name), os.path.join(etc, name)
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        elif os.path.isdir(source):
            shutil.copytree(source, target, symlinks=True)
        elif os.path.isfile(source):
            shutil.copyfile(source, target)


def _populate_dev(dev: str, devices: tuple[str, ...]) -> None:
    os.makedirs(dev + "/shm", mode=0o755)
    for device in devices:
        target = dev + device.removeprefix("/dev")
        if os.path.isdir(device):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:
            Path(target).touch()  # a bind mount needs a file to cover
        _mount(device, target, None, MS_BIND | MS_REC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, os.path.join(dev, name))


def _set_read_only(path: str) -> None:
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    _check(
        _libc.syscall(
            ctypes.c_long(SYS_MOUNT_SETATTR),
            ctypes.c_int(AT_FDCWD),
            path.encode(),
            ctypes.c_uint(AT_RECURSIVE),
            ctypes.byref(attr),
            ctypes.c_size_t(ctypes.sizeof(attr)),
        ),
        f"mount_setattr({path}, read-only)",
    )


def _enter_root(root: str) -> None:
    """Make `root` the filesystem root and drop the host's tree entirely."""
    os.chdir(root)
    # pivot_root(".", "."): the old root ends up stacked on the new one, and the lazy unmount
    # takes it away, with every host mount under it; no directory for it is needed.
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise SandboxError(f"pivot_root: unknown syscall number on {os.uname().machine}")
    _check(_libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", ctypes.c_int(MNT_DETACH)), "umount2(old root)")
    os.chdir("/")


def _bring_up_loopback() -> None:
    # A fresh network namespace has only `lo`, and it is down: gloo cannot rendezvous until it is
    # up (trap 6). No other interface exists, so the host and its loopback are unreachable.
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sh22x", b"lo", flags | iff_up))


def prepare_confinement(plan: SandboxPlan | None) -> bool:
    """What confine_rank does that no order decides, done by a staged rank while it waits for
    its order (about 0.7 ms of a rank's start): its own cgroup namespace, its OOM score, and the
    allow-list, loaded while still root (CAP_SYS_ADMIN permits it before no_new_privs, which
    confine_rank sets with the uid drop, both of which the allow-list permits). Whether done."""
    if plan is None:
        return False
    hide_cgroup_path()
    _raise_oom_score()
    install_seccomp()
    return True


def _raise_oom_score() -> None:
    # The slot worker shares the memory cgroup with its runs: the OOM killer must pick a rank (or
    # its children, which inherit this), never the worker that reports what happened. Raising
    # the score needs no privilege; lowering the worker's would need CAP_SYS_RESOURCE.
    Path("/proc/self/oom_score_adj").write_text("1000")


def confine_rank(plan: SandboxPlan | None, budget: RunBudget, prepared: bool = False) -> None:
    """Apply rlimits and, when sandboxed, drop to the unprivileged uid for good (`prepared`:
    prepare_confinement has done its part)."""
    limits = {
        resource.RLIMIT_CPU: budget.cpu_seconds,
        resource.RLIMIT_NOFILE: budget.open_files,
        resource.RLIMIT_FSIZE: budget.file_bytes,
        resource.RLIMIT_CORE: 0,
    }
    if plan is not None:
        # Counted per uid: each slot has its own (identities.py), so this counts this run only;
        # a backstop, the pids cgroup is the real cap.
        limits[resource.RLIMIT_NPROC] = 4 * budget.pids
    for which, value in limits.items():
        resource.setrlimit(which, (value, value))
    if plan is None:
        return
    if not prepared:
        hide_cgroup_path()
        _raise_oom_score()
    os.setgroups([])
    os.setresgid(plan.gid, plan.gid, plan.gid)
    os.setresuid(plan.uid, plan.uid, plan.uid)
    # No setuid binary (su, sudo) can give root back after this; it also lets us load seccomp.
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    if not prepared:
        install_seccomp()
    if os.geteuid() == 0 or os.getuid() == 0:
        raise SandboxError("still root after dropping privileges")
    # Changing uid cleared "dumpable", which makes /proc/self root-owned: snippets that read
    # their own memory use (/proc/self/status) would fail as they never do under torchrun. The
    # only processes of this uid a rank can see are its own run's (own pid namespace).
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(DUMPABLE)")


def hide_cgroup_path() -> None:
    """Give the caller a cgroup namespace rooted at its own cgroup (root only, before the uid
    drop), so /proc/self/cgroup says "/" and not the slot's host path (ranklab/slot-<host
    pid>-<slot>, which names the worker's pid on the host and how many slots there are).

    Per rank, in confine_rank, so that a sibling's rank (which enters init's other namespaces,
    not its cgroup one) is covered too. It changes what a rank sees, not what limits it: the
    slot's cgroups still hold it."""
    _check(_libc.unshare(CLONE_NEWCGROUP), "unshare(CLONE_NEWCGROUP)")


def install_seccomp() -> None:
    """Load the ranks' system call allow-list (seccomp_policy.py) into the calling process
    (inherited by its children); compiled once in the zygote by make_plan."""
    try:
        seccomp_policy.install(seccomp_policy.program())
    except (OSError, seccomp_policy.SeccompUnavailable) as error:
        raise SandboxError(str(error)) from error


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL the caller when its parent dies."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the name may contain spaces and ")"


# The slot cgroups live under a parent of this name (per controller on v1, once on v2).
CGROUP_PARENT = "ranklab"


def cgroup_version(root: Path) -> int:
    """Tell which hierarchy is mounted at root: 2 (unified), 1 (one per controller), or raise.

    A cgroup v2 directory, the root included, always holds cgroup.controllers; a v1 layout is
    a directory of per-controller mounts (memory/, pids/, cpu/...). Hybrid hosts mount both:
    /sys/fs/cgroup is then v1, with the (usually controller-less) v2 tree at unified/.
    """
    if (root / "cgroup.controllers").exists():
        return 2
    if (root / "memory").is_dir():
        return 1
    raise SandboxError(
        f"no usable cgroup hierarchy at {root}: neither cgroup v2 (no cgroup.controllers) "
        "nor cgroup v1 (no memory/ hierarchy)"
    )


def slot_cgroup_parents(root: str) -> list[Path]:
    """Where the slot cgroups of the hierarchy at root live (for removing stale ones)."""
    try:
        version = cgroup_version(Path(root))
    except SandboxError:
        return []
    if version == 2:
        return [Path(root, CGROUP_PARENT)]
    return [Path(root, controller, CGROUP_PARENT) for controller in ("memory", "pids", "cpu")]


TCP_MEM = "/proc/sys/net/ipv4/tcp_mem"  # the host's one TCP buffer pool: low, pressure, high


def tcp_limit(run_bytes: int, slots: int, tcp_mem: str) -> int:
    """A run's TCP buffer limit on cgroup v1: what the budget allows (gloo's need, measured),
    and never more than the host's tcp_mem low mark (pages) over twice the slots: the pool is
    one for the whole host, so a run near its limit in every slot stays under half of the
    point where the kernel starts squeezing every socket on the host, the app's included."""
    low_bytes = int(tcp_mem.split()[0]) * os.sysconf("SC_PAGE_SIZE")
    return min(run_bytes, low_bytes // (2 * max(1, slots)))


class CgroupV1Slot:
    """A slot on cgroup v1: a directory per controller, <root>/<controller>/ranklab/<slot>."""

    def __init__(self, root: Path, name: str, cpu_fairness: bool) -> None:
        self.directories = [
            root / "memory" / CGROUP_PARENT / name,
            root / "pids" / CGROUP_PARENT / name,
        ]
        for directory, control in zip(
            self.directories, ("memory.limit_in_bytes", "pids.max"), strict=True
        ):
            # Never create the hierarchy: a plain directory is not a cgroup, and files written
            # there limit nothing. The kernel fills a real cgroup with control files.
            directory.parent.mkdir(exist_ok=True)
            directory.mkdir(exist_ok=True)
            if not (directory / control).exists():
                raise SandboxError(f"{directory.parent} is not a cgroup v1 hierarchy")
        cpu = root / "cpu" / CGROUP_PARENT / name
        if cpu_fairness and (cpu.parent.parent / "cpu.shares").exists():
            # Every new cpu cgroup gets the default cpu.shares (1024): equal weight per slot.
            cpu.parent.mkdir(exist_ok=True)
            cpu.mkdir(exist_ok=True)
            self.directories.append(cpu)

    def set_limits(self, budget: RunBudget) -> None:
        """Write one run's memory (and memory+swap) and process caps."""
        memory, pids = self.directories[:2]
        value = str(budget.memory_bytes)
        # memsw (memory + swap) must stay >= the memory limit, so the write order depends on the
        # direction of the change: try one order, then the other. Without memsw, swap would let
        # a memory bomb push the host into swapping instead of being OOM-killed.
        files = [memory / "memory.limit_in_bytes"]
        if (memory / "memory.memsw.limit_in_bytes").exists():
            files.append(memory / "memory.memsw.limit_in_bytes")
        try:
            for file in files:
                file.write_text(value)
        except OSError:
            for file in reversed(files):
                file.write_text(value)
        (pids / "pids.max").write_text(str(budget.pids))
        # v1 charges socket buffers to no limit of the run's: a run held ~660 MiB of the host's
        # TCP memory while its cgroup showed 21 MiB. Writing a TCP limit switches that
        # accounting on (for sockets created afterwards) and bounds it, in a counter of its own
        # (v1 never adds it to memory.usage); past it, sends wait for the peer to read instead
        # of growing buffers. The limit is what gloo needs, not a share of the run's memory: a
        # quarter of a 4-rank run's (575 MiB) was half the host's pressure mark on 23 GiB.
        tcp = memory / "memory.kmem.tcp.limit_in_bytes"
        if tcp.exists():
            # Every executor's slots on the host, this one's and any other's, share the pool.
            slots = sum(1 for _ in memory.parent.glob("slot-*"))
            limit = tcp_limit(budget.tcp_bytes, slots, Path(TCP_MEM).read_text())
            # EBUSY while the buffers of the slot's last run, still draining, exceed the new
            # limit: that run's limit then stays in force, still a bound.
            with contextlib.suppress(OSError):
                tcp.write_text(str(limit))

    def oom_kills(self) -> int:
        """Count the OOM kills in the slot's memory cgroup (memory.oom_control's oom_kill)."""
        return _count(self.directories[0] / "memory.oom_control", "oom_kill")


class CgroupV2Slot:
    """A slot on cgroup v2: one directory, <root>/ranklab/<slot>, holding every controller.

    v2 has one rule v1 has not: "no internal processes". A cgroup that hands controllers to its
    children (cgroup.subtree_control) may hold no process itself, the root excepted. So the
    ranklab parent only ever holds slot directories, and the processes (slot workers, runs)
    live in the slots, the leaves. `root` itself must be the hierarchy's root or an empty,
    delegated cgroup (in a container with its own cgroup namespace, the container's processes
    sit in its root: move them to a child first, or point the executor at an empty cgroup).
    """

    def __init__(self, root: Path, name: str, controllers: tuple[str, ...]) -> None:
        parent = root / CGROUP_PARENT
        self.directories = [parent / name]
        available = set(_read(root / "cgroup.controllers").split())
        missing = [controller for controller in controllers if controller not in available]
        if missing:
            raise SandboxError(
                f"cgroup v2 at {root} does not offer the {' and '.join(missing)} controller(s) "
                f"(available: {' '.join(sorted(available)) or 'none'})"
            )
        # Parent first: a controller reaches ranklab's slots only once it reaches ranklab.
        _enable_controllers(root, controllers)
        parent.mkdir(exist_ok=True)
        if _read(parent / "cgroup.procs").split():
            raise SandboxError(
                f"{parent} holds processes: under cgroup v2 a cgroup that hands controllers to "
                "its children may hold none (the 'no internal processes' rule)"
            )
        _enable_controllers(parent, controllers)
        directory = self.directories[0]
        directory.mkdir(exist_ok=True)
        # A plain directory is not a cgroup, and one without these files limits nothing.
        wanted = {"memory": "memory.max", "pids": "pids.max", "cpu": "cpu.weight"}
        for controller in controllers:
            if not (directory / wanted[controller]).exists():
                raise SandboxError(f"{directory} is not a cgroup v2 slot with {controller}")
        if "cpu" in controllers:
            # The default weight, written to say what it is for: equal CPU per slot, so a fork
            # bomb gets one slot's share however many processes it spins (v1's cpu.shares).
            (directory / "cpu.weight").write_text("100")

    def set_limits(self, budget: RunBudget) -> None:
        """Write one run's memory and process caps, and no swap at all."""
        directory = self.directories[0]
        (directory / "memory.max").write_text(str(budget.memory_bytes))
        # Socket buffers need nothing here: v2 charges them to memory.current, under memory.max.
        # v2 counts swap apart from memory (v1's memsw counts both): 0 keeps a memory bomb from
        # swapping the host instead of being OOM-killed. Absent without swap accounting.
        if (directory / "memory.swap.max").exists():
            (directory / "memory.swap.max").write_text("0")
        (directory / "pids.max").write_text(str(budget.pids))

    def oom_kills(self) -> int:
        """Count the OOM kills in the slot (memory.events' oom_kill)."""
        return _count(self.directories[0] / "memory.events", "oom_kill")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _enable_controllers(cgroup: Path, controllers: tuple[str, ...]) -> None:
    """Hand the controllers to cgroup's children (only those not handed yet)."""
    enabled = set(_read(cgroup / "cgroup.subtree_control").split())
    missing = [f"+{controller}" for controller in controllers if controller not in enabled]
    if not missing:
        return
    try:
        (cgroup / "cgroup.subtree_control").write_text(" ".join(missing))
    except OSError as error:
        raise SandboxError(
            f"cannot enable {' '.join(missing)} in {cgroup}/cgroup.subtree_control ({error}); "
            "under cgroup v2 a cgroup other than the root must hold no process to hand "
            "controllers to its children (the 'no internal processes' rule)"
        ) from error


def _count(path: Path, key: str) -> int:
    fields = dict(line.split() for line in _read(path).splitlines() if len(line.split()) == 2)
    return int(fields.get(key, "0"))


class SlotCgroups:
    """A slot's cgroups, v1 or v2: hard caps on memory and processes for everything inside.

    A slot worker joins its cgroups once, at start-up, and every run it forks inherits them:
    attaching a process to a v1 cgroup costs 5-15 ms (an RCU grace period), too much per run.
    With cpu_fairness, each slot also gets an equal CPU weight, so a fork bomb spinning 100
    processes gets one slot's share of the CPU, not 100 shares: a concurrent 2-rank run took
    0.1 s instead of 4.4 s. It is off by default because group scheduling cost 15-20% of
    throughput on 2 cores (12.5/11.5/9.4 vs 10.0/8.7/9.0 runs/s, interleaved, on v1), and a
    bomb only delays concurrent runs until its own deadline.

    What differs between the hierarchies (where the directories are, which files hold the
    limits and the OOM count) is in CgroupV1Slot and CgroupV2Slot; joining, killing and
    removing work the same on both (cgroup.procs, rmdir).
    """

    def __init__(self, slot: CgroupV1Slot | CgroupV2Slot) -> None:
        self.slot = slot

    @classmethod
    def for_plan(cls, plan: SandboxPlan, name: str) -> SlotCgroups:
        """Create (or reuse) slot `name`'s cgroups on the hierarchy at plan.cgroup_root."""
        root = Path(plan.cgroup_root)
        try:
            if cgroup_version(root) == 2:
                available = _read(root / "cgroup.controllers").split()
                cpu = ("cpu",) if plan.cpu_fairness and "cpu" in available else ()
                return cls(CgroupV2Slot(root, name, ("memory", "pids", *cpu)))
            return cls(CgroupV1Slot(root, name, plan.cpu_fairness))
        except OSError as error:
            raise SandboxError(f"cgroup setup failed: {error}") from error

    @property
    def dirs(self) -> list[Path]:
        """The slot's cgroup directories (one per controller on v1, one on v2)."""
        return self.slot.directories

    def join(self) -> None:
        """Move the calling process (and its future children) into the cgroups."""
        try:
            for directory in self.dirs:
                (directory / "cgroup.procs").write_text(str(os.getpid()))
        except OSError as error:
            raise SandboxError(f"cannot join cgroup: {error}") from error

    def set_limits(self, budget: RunBudget) -> None:
        """Apply one run's memory and process caps."""
        try:
            self.slot.set_limits(budget)
        except OSError as error:
            raise SandboxError(f"cannot set cgroup limits: {error}") from error

    def oom_kills(self) -> int:
        """Return how many processes the kernel has OOM-killed in this cgroup so far."""
        return self.slot.oom_kills()

    def members(self) -> set[int]:
        """The pids in the slot's cgroups now."""
        pids: set[int] = set()
        for directory in self.dirs:
            pids.update(int(pid) for pid in _read(directory / "cgroup.procs").split())
        return pids

    def kill_all_but(self, spared: set[int], spared_alone: tuple[int, ...] = ()) -> None:
        """SIGKILL whatever is still in the cgroups but the slot worker, `spared` and their
        direct children (a sibling's worker waits in a child for the rank it started: killed,
        that child would leave the rank's zombie to the host's init), and `spared_alone`
        without its children (the slot's stager: its children are the runs' inits).

        Not cgroup.kill (v2): it kills every member, and the slot worker, its stager and the
        siblings' workers sit in the slot for good.
        """
        spared = spared | {os.getpid()}
        for pid in self.members():
            if pid in spared or pid in spared_alone or _parent_of(pid) in spared:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Delete the cgroups (best effort: a cgroup with processes in it stays)."""
        for directory in self.dirs:
            with contextlib.suppress(OSError):
                directory.rmdir()

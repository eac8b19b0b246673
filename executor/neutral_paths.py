"""Start the zygote with Python, its packages and the executor at neutral paths under /opt/ranklab.

The interpreter may live under root's home (/root/.pyenv/versions/3.11.7) and the virtualenv
inside the checkout (/srv/app/.venv). A rank is a fork of the zygote, so every module it holds
keeps the __file__ it was imported with, and /proc/mounts, sys.executable, sys.path and the
lines of a learner's traceback (an exception raised inside torch) would name those host paths.
So the pool starts the zygote through this module (`python -m executor.neutral_paths`, as root,
with the zygote's configuration still unread on stdin), which

1. enters a mount namespace of its own (private: nothing here reaches the host);
2. mounts a small tmpfs at /opt/ranklab and binds into it, by open descriptors (so a tree under
   /opt itself still works):
       /opt/ranklab/python        the interpreter's installation (sys.base_prefix)
       /opt/ranklab/venv          the virtualenv, rebuilt: its lib/ bound, a pyvenv.cfg whose home
                                  is /opt/ranklab/python/bin, and bin/python, the interpreter's
                                  binary bound as a file (a venv's bin/python is a symlink to the
                                  host path, which /proc/self/exe would show)
       /opt/ranklab/lib/executor  this package;
3. execs /opt/ranklab/venv/bin/python -m executor.zygote with PYTHONPATH=/opt/ranklab/lib.

The Python trees are overlay mounts, not binds: /proc/self/mountinfo names a bind's source (its
path inside the host's filesystem: /root/.pyenv/..., /srv/app/.venv/lib), an overlay's root is
its own "/", and its layers are named as they were given, /proc/self/fd/N. Each overlay's top
layer, on the tmpfs, whites out the files of an editable install (its `__editable__` .pth and
finder, whose MAPPING holds the checkout's path, and a dist-info's direct_url.json): the zygote
then never imports that finder, so no rank inherits it in sys.meta_path. Where overlayfs is
missing the trees are bound as before, and the zygote says so on stderr. Measured against binds,
alternated on 2 loaded cores (load 5.6-6): the executor's start 10.8-16.0 s (binds 11.3-13.4 s),
a 2-rank all_reduce run's median 130-172 ms (binds 129-152 ms): no difference beyond the noise.

Python then computes every path from those: sys.prefix, site-packages, torch's __file__, and the
sandbox's allow-list (sandbox.make_plan) exposes the same neutral trees to the ranks. Cost: one
short extra interpreter start per zygote (tens of ms at start-up), nothing per run.

Without a virtualenv (a container's system Python), /opt/ranklab/python is sys.prefix itself.
Without root (unshare refused), it execs the zygote at the host paths and says why on stderr;
the zygote's own sandbox self-test then refuses untrusted code anyway. Trusted mode does not come
here: its runs are unsandboxed, in the host's view, by definition.
"""

from __future__ import annotations

import ctypes
import glob
import os
import stat
import sys

NEUTRAL = "/opt/ranklab"
PYTHON = f"{NEUTRAL}/python"
VENV = f"{NEUTRAL}/venv"
LIBRARY = f"{NEUTRAL}/lib"
LAYERS = f"{NEUTRAL}/layers"  # each overlay's top layer: whiteouts only
# An editable install's files, under a site-packages directory: they name the checkout.
EDITABLE = ("__editable__*", "__pycache__/__editable__*", "*.dist-info/direct_url.json")
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x20, 0x1000, 0x4000, 0x40000

_libc = ctypes.CDLL(None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """mount(2), raising OSError naming the target (the sandbox mounts through it too)."""
    _call(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _bind_from(descriptor: int, target: str) -> None:
    mount(f"/proc/self/fd/{descriptor}", target, None, MS_BIND | MS_REC)


def masked_files(tree: str) -> list[str]:
    """The editable install's files in a Python tree (a venv's lib/ or an installation),
    relative to it."""
    found: list[str] = []
    for site in ("*/site-packages", "lib/*/site-packages"):
        for pattern in EDITABLE:
            found += glob.glob(os.path.join(site, pattern), root_dir=tree)
    return sorted(found)


def _overlay_from(descriptor: int, target: str, name: str, notes: list[str]) -> None:
    """Mount the tree held by descriptor at target as a read-only overlay (see the module's
    docstring), or bind it where overlayfs is missing (noted)."""
    layer = f"{LAYERS}/{name}"
    os.makedirs(layer, mode=0o755)
    for relative in masked_files(f"/proc/self/fd/{descriptor}"):
        os.makedirs(os.path.join(layer, os.path.dirname(relative)), mode=0o755, exist_ok=True)
        os.mknod(os.path.join(layer, relative), stat.S_IFCHR, os.makedev(0, 0))  # a whiteout
    top = os.open(layer, os.O_PATH | os.O_DIRECTORY)
    try:
        # Two lower layers and no upper: a read-only overlay (one lower layer alone is refused).
        lower = f"lowerdir=/proc/self/fd/{top}:/proc/self/fd/{descriptor}"
        mount("ranklab", target, "overlay", MS_RDONLY, lower)
    except OSError as error:
        notes.append(f"{target} bound, its host path visible in mountinfo ({error})")
        _bind_from(descriptor, target)
    finally:
        os.close(top)


def relocate(package_dir: str, notes: list[str] | None = None) -> list[str]:
    """Build /opt/ranklab in a new mount namespace; return the argv that runs the zygote there.

    `notes` collects what could not be made neutral (the zygote runs anyway)."""
    notes = [] if notes is None else notes
    base = os.path.realpath(sys.base_prefix)
    in_venv = os.path.realpath(sys.prefix) != base
    binary = os.path.realpath(sys.executable)
    _call(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    mount("none", "/", None, MS_REC | MS_PRIVATE)  # or these mounts would reach the host
    # Held by descriptor (opened in the new namespace: a bind's source must be a mount of the
    # caller's own): the tmpfs below may cover the paths they were opened by.
    sources = {
        "python": os.open(base, os.O_PATH | os.O_DIRECTORY),
        "package": os.open(package_dir, os.O_PATH | os.O_DIRECTORY),
        "binary": os.open(binary, os.O_PATH),
    }
    if in_venv:
        sources["venv_lib"] = os.open(
            os.path.join(os.path.realpath(sys.prefix), "lib"), os.O_PATH | os.O_DIRECTORY
        )
    try:
        os.makedirs(NEUTRAL, mode=0o755, exist_ok=True)  # an empty mount point, on the host
        mount("tmpfs", NEUTRAL, "tmpfs", 0, "size=1m,mode=755")
        for directory in (PYTHON, f"{LIBRARY}/executor"):
            os.makedirs(directory, mode=0o755)
        _overlay_from(sources["python"], PYTHON, "python", notes)
        _bind_from(sources["package"], f"{LIBRARY}/executor")
        if in_venv:
            os.makedirs(f"{VENV}/bin")
            os.makedirs(f"{VENV}/lib")
            os.symlink("lib", f"{VENV}/lib64")
            _overlay_from(sources["venv_lib"], f"{VENV}/lib", "venv_lib", notes)
            with open(f"{VENV}/pyvenv.cfg", "w") as config:
                version = ".".join(str(part) for part in sys.version_info[:3])
                config.write(
                    f"home = {PYTHON}/bin\ninclude-system-site-packages = false\n"
                    f"version = {version}\n"
                )
            executable = f"{VENV}/bin/python"
            open(executable, "x").close()  # a bind mount needs a file to cover
            # From inside the overlay when it holds the binary: a bind names its source's path.
            inside = os.path.join(PYTHON, os.path.relpath(binary, base))
            source = f"/proc/self/fd/{sources['binary']}"
            mount(inside if _is_under(binary, base) else source, executable, None, MS_BIND)
        else:
            executable = os.path.join(PYTHON, os.path.relpath(binary, base))
        mount("none", NEUTRAL, None, MS_REMOUNT | MS_RDONLY)
    finally:
        for descriptor in sources.values():
            os.close(descriptor)
    return [executable, "-m", "executor.zygote"]


def _is_under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def main() -> None:
    """Exec the zygote at the neutral paths (at the host paths if they cannot be built)."""
    package_dir = os.path.dirname(os.path.abspath(__file__))
    environment = dict(os.environ)
    notes: list[str] = []
    try:
        argv = relocate(package_dir, notes)
        environment["PYTHONPATH"] = LIBRARY
        for note in notes:
            print(f"executor: {note}", file=sys.stderr, flush=True)
    except OSError as error:
        print(f"executor: zygote left at host paths ({error})", file=sys.stderr, flush=True)
        argv = [sys.executable, "-m", "executor.zygote"]
    os.execve(argv[0], argv, environment)


if __name__ == "__main__":
    main()

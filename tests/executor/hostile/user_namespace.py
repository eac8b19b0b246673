# attack: become "root" in a new user namespace (unshare(CLONE_NEWUSER)), the usual first step
# of a kernel exploit or of mounting over files.
# expect: error with PermissionError — the seccomp filter refuses namespace creation (along with
# ptrace, bpf, keyctl, io_uring, perf_event_open and module loading).
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) != 0:
    errno = ctypes.get_errno()
    raise PermissionError(errno, os.strerror(errno))
print("root inside a new user namespace")

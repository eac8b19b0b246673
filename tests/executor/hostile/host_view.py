# attack: look around the host — its /sys (network interfaces, block devices, cgroups), its
# mounts, the warm parent's command line, another checkout's database next to this one, the
# host's accounts.
# expect: ok — the snippet catches every failure and prints what it saw; the test checks that
# the rank's root holds only the allow-list (/usr, the Python trees, a private /tmp...).
import json
import os

seen = {"sys": os.listdir("/sys") if os.path.isdir("/sys") else None}
for path in [
    "/sys/class/net",
    "/sys/block",
    "/sys/fs/cgroup/memory",
    "__SIBLING_DB__",
    "/proc/1/environ",
]:
    try:
        with open(path, "rb") if os.path.isfile(path) else os.scandir(path) as handle:
            seen[path] = repr(handle.read(2000) if hasattr(handle, "read") else list(handle))
    except OSError as error:
        seen[path] = type(error).__name__
with open("/proc/mounts") as mounts:
    seen["mounts"] = [line.split()[1] for line in mounts]
with open("/proc/1/cmdline", "rb") as cmdline:
    seen["init_cmdline"] = cmdline.read().decode(errors="replace")
try:
    seen["checkouts"] = os.listdir(os.path.dirname("__REPO__"))
except OSError as error:
    seen["checkouts"] = type(error).__name__
with open("/etc/passwd") as passwd:
    seen["accounts"] = [line.split(":")[0] for line in passwd]
print(json.dumps(seen))

# attack: read secrets — the executor's environment, /proc of other processes, /etc/shadow,
# the app's database and files in the repository.
# expect: ok — the snippet catches every failure; the test asserts no secret reached its output.
import glob
import os

print("env", dict(os.environ))
paths = ["/etc/shadow", "__CANARY_FILE__", "/proc/1/environ", "/proc/self/environ"]
paths += glob.glob("/proc/*/environ") + glob.glob("__REPO__/var/*")
for path in paths:
    try:
        with open(path, "rb") as handle:
            print(path, handle.read(4000))
    except OSError as error:
        print(path, "blocked:", type(error).__name__)

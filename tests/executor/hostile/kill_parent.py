# attack: kill its parent — SIGKILL the process that launched the rank, then everything it can.
# expect: error with PermissionError — the parent is the run's root-owned init, out of reach of
# the sandbox uid; the executor's own processes are not even visible (own pid namespace).
import os
import signal

print("parent is pid", os.getppid(), flush=True)
os.kill(os.getppid(), signal.SIGKILL)

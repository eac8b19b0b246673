# attack: kill its parent — SIGKILL the process that launched the rank, then everything it can.
# expect: error with PermissionError when the parent is the run's root-owned init, out of reach of
# the sandbox uid; the executor's own processes are not even visible (own pid namespace). A rank
# from a sibling warm parent sees parent pid 0 (outside its namespace) and only kills itself.
import os
import signal

print("parent is pid", os.getppid(), flush=True)
os.kill(os.getppid(), signal.SIGKILL)

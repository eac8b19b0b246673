# attack: detached daemon — double-fork and setsid() to leave the process group and outlive
# the run.
# expect: ok — the snippet itself ends fine, but the daemon dies with the run's pid namespace:
# no process of the sandbox uid is left on the host afterwards.
import os
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            time.sleep(0.1)
    os._exit(0)
time.sleep(0.2)
print("daemon started")

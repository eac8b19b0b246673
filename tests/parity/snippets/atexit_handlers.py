# atexit handlers run when the interpreter exits normally, last registered first, after the
# main body (and after non-daemon threads finish).
import atexit
import os
import threading
import time

rank = os.environ.get("RANK", "?")


def registered_first() -> None:
    print(f"rank {rank}: handler registered first runs last", flush=True)


def registered_second() -> None:
    print(f"rank {rank}: handler registered second runs first", flush=True)


def late_thread() -> None:
    time.sleep(0.2)
    print(f"rank {rank}: non-daemon thread finishes before the handlers", flush=True)


atexit.register(registered_first)
atexit.register(registered_second)
threading.Thread(target=late_thread).start()
print(f"rank {rank}: main body done", flush=True)

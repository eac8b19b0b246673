# When a rank fails, torchrun stops the others with SIGTERM (SIGKILL only after a 30 s grace), so
# a rank's SIGTERM handler runs: it prints and ends the rank (graceful shutdown, a checkpoint
# saved on the signal). Rank 1 fails while rank 0 sleeps outside any collective.
import signal
import sys
import time

import torch.distributed as dist


def save_and_exit(signum: int, frame: object) -> None:
    print(f"rank {rank}: {signal.Signals(signum).name} received, checkpoint saved", flush=True)
    sys.exit(0)


dist.init_process_group("gloo")
rank = dist.get_rank()
signal.signal(signal.SIGTERM, save_and_exit)
dist.barrier()
print(f"rank {rank} ready", flush=True)
if rank == 1:
    time.sleep(0.5)  # rank 0 is asleep by now
    raise RuntimeError("rank 1 fails")
time.sleep(20)
print("never printed")

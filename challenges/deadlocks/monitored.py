import time
from datetime import timedelta
import torch.distributed as dist

WAIT = 2  # seconds rank 0 waits at the barrier

dist.init_process_group("gloo")
rank = dist.get_rank()

if rank == 1:
    time.sleep(6)  # stuck somewhere: never reaches the barrier in time
else:
    dist.monitored_barrier(timeout=timedelta(seconds=WAIT))
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

import time
from datetime import timedelta
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

if rank == 1:
    time.sleep(6)  # stuck somewhere: never reaches the barrier in time
else:
    dist.monitored_barrier(timeout=timedelta(seconds=2))
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

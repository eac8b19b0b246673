import time
from datetime import timedelta
import torch
import torch.distributed as dist

LIMIT = 3  # seconds: the group's timeout

dist.init_process_group("gloo", timeout=timedelta(seconds=LIMIT))
rank = dist.get_rank()

if rank == 1:
    time.sleep(8)  # busy elsewhere: joins nothing for 8 s
else:
    dist.all_reduce(torch.ones(1))
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

# A slow rank is not a deadlock: rank 1 sleeps 3 s before the all_reduce, rank 0 waits for it,
# and both finish with the sum.
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 1:
    time.sleep(3.0)
started = time.monotonic()
tensor = torch.tensor([rank + 1.0])
dist.all_reduce(tensor)
waited = time.monotonic() - started
print(f"rank {rank}: sum {tensor.item()}, waited in all_reduce more than 2 s: {waited > 2.0}")
dist.destroy_process_group()

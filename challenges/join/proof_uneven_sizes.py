import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(nn.Linear(2, 1))
rows = 3 if rank == 0 else 5  # different batch sizes, the same number of batches
for step in range(2):
    model(torch.ones(rows, 2)).sum().backward()
print(f"rank {rank}: 2 steps of {rows} rows done", flush=True)
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Linear(2, 1))

batches = 3 if rank == 1 else 2  # rank 1's shard holds one batch more
for step in range(batches):
    model(torch.ones(4, 2)).sum().backward()  # each backward all-reduces the gradients
    print(f"rank {rank}: step {step}", flush=True)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

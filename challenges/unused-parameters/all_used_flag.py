import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1)), find_unused_parameters=True)
for step in range(2):
    model(torch.randn(8, 4)).sum().backward()
print(f"rank {rank}: done")
dist.destroy_process_group()

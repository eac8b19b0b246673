import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(3)  # the same seed on every rank

if rank == 1:
    noise = torch.rand(2)  # rank 1 draws a little noise first

layer = nn.Linear(3, 1)
before = layer.weight.sum().item()
model = DDP(layer)
after = model.module.weight.sum().item()
print(f"rank {rank}: before {before:.4f}, after {after:.4f}")
dist.destroy_process_group()

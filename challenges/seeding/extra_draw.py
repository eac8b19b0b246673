import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

SEED = 0

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(SEED)  # the same seed on every rank

if rank == 0:
    preview = torch.randn(4)  # rank 0 logs a random sample first

layer = nn.Linear(2, 1)
before = layer.weight.sum().item()
model = DDP(layer)
after = model.module.weight.sum().item()
print(f"rank {rank}: before DDP {before:.4f}, after DDP {after:.4f}")
dist.destroy_process_group()

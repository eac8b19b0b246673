import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

SEED = 0
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(SEED + rank)  # a different seed on every rank
layer = nn.Linear(4, 1)
before = layer.weight.sum().item()
model = DDP(layer)
print(f"rank {rank}: before DDP {before:.4f}, after DDP {model.module.weight.sum().item():.4f}")
dist.destroy_process_group()

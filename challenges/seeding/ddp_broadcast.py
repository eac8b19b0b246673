import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
# No torch.manual_seed: each rank initialises its own random weights.
layer = nn.Linear(4, 1)
model = DDP(layer)
print(f"{model.module.weight.sum().item():.4f}")
dist.destroy_process_group()

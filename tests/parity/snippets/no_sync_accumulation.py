# Gradient accumulation with DDP.no_sync(): backward inside no_sync keeps local gradients (they
# differ per rank); the next backward outside it all-reduces the accumulated sum (averaged).
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(nn.Linear(2, 1, bias=False))
with torch.no_grad():
    model.module.weight.fill_(1.0)
with model.no_sync():
    model(torch.tensor([[rank + 1.0, 1.0]])).sum().backward()
print("grad after the no_sync step (local):", model.module.weight.grad.tolist())
model(torch.tensor([[rank + 1.0, 2.0]])).sum().backward()
print("grad after the synced step (averaged sum):", model.module.weight.grad.tolist())
dist.destroy_process_group()

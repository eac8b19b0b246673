import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # nn.Linear draws its initial weight, overwritten below
layer = nn.Linear(1, 1, bias=False)
with torch.no_grad():
    layer.weight.fill_(1.0)
model = DDP(layer)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.tensor([[1.0 + rank]])  # rank 0 reads x = 1, rank 1 reads x = 2; loss w * x

with model.no_sync():  # a step whose backward never syncs
    model(x).sum().backward()
opt.step()
opt.zero_grad()
local = layer.weight.item()

model(x).sum().backward()  # a normal, synced step: gradient (1 + 2) / 2 on both ranks
opt.step()
opt.zero_grad()
synced = layer.weight.item()
print(f"rank {rank}: after the local step {local:.2f}, after a synced step {synced:.2f}")
dist.destroy_process_group()

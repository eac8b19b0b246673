import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()

model = DDP(nn.BatchNorm1d(1))  # default buffer settings; momentum 0.1
batch = torch.full((4, 1), 10.0 * (rank + 1))  # rank 0 sees 10s, rank 1 sees 20s
model(batch).sum().backward()  # one training step

model.eval()
with torch.no_grad():
    model(torch.zeros(2, 1))  # one evaluation forward pass

means = [None] * dist.get_world_size()
dist.all_gather_object(means, round(model.module.running_mean.item(), 4))
if rank == 0:
    print("running_mean per rank:", means)

dist.destroy_process_group()

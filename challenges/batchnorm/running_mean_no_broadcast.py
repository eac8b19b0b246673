import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

HIGH = 20.0  # rank 1's batch value; rank 0's is 10
STEPS = 2  # training steps

dist.init_process_group("gloo")
rank = dist.get_rank()

model = DDP(nn.BatchNorm1d(1), broadcast_buffers=False)  # momentum 0.1
batch = torch.full((4, 1), 10.0 if rank == 0 else HIGH)  # rank 0's batch is all 10s, rank 1's all HIGH

for step in range(STEPS):
    model(batch).sum().backward()

mean = model.module.running_mean.item()
means = [None] * dist.get_world_size()
dist.all_gather_object(means, round(mean, 4))
if rank == 0:
    print("running_mean per rank:", means)

dist.destroy_process_group()

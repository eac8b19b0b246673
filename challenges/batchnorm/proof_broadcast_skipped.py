import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
batch = torch.full((4, 1), 10.0 * (rank + 1))  # rank 0 sees 10s, rank 1 sees 20s


def running_means(forward_without_grad):
    model = DDP(nn.BatchNorm1d(1))  # default buffer settings; momentum 0.1
    for step in range(2):
        if forward_without_grad:
            with torch.no_grad():  # a training-mode forward that builds no graph
                model(batch)
        else:
            model(batch).sum().backward()
    means = [None] * dist.get_world_size()
    dist.all_gather_object(means, round(model.module.running_mean.item(), 4))
    return means


with_grad, without_grad = running_means(False), running_means(True)
if rank == 0:
    print("with grad:", with_grad)
    print("under no_grad:", without_grad)
dist.destroy_process_group()

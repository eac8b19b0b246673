import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
batch = torch.full((4, 1), 10.0 * (rank + 1))  # rank 0 sees 10s, rank 1 sees 20s


def running_means(how):
    model = DDP(nn.BatchNorm1d(1))  # default buffer settings; momentum 0.1
    for step in range(2):
        if how == "no_grad":
            with torch.no_grad():  # a training-mode forward that builds no graph
                model(batch)
        elif how == "no_sync":
            with model.no_sync():  # a training forward and backward that skip the all-reduce
                model(batch).sum().backward()
        else:
            model(batch).sum().backward()
    means = [None] * dist.get_world_size()
    dist.all_gather_object(means, round(model.module.running_mean.item(), 4))
    return means


with_grad, without_grad, unsynced = (running_means(how) for how in ("grad", "no_grad", "no_sync"))
if rank == 0:
    print("with grad:", with_grad)
    print("under no_grad:", without_grad)
    print("inside no_sync:", unsynced)
dist.destroy_process_group()

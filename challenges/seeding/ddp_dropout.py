import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def same_on_all_ranks(t):
    copies = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, t)
    return all(torch.equal(c, t) for c in copies)


dist.init_process_group("gloo")
# No torch.manual_seed anywhere.
model = DDP(nn.Sequential(nn.Linear(16, 16), nn.Dropout(p=0.5)))
out = model(torch.ones(1, 16))
mask = (out != 0).float()

print("weights equal on all ranks:", same_on_all_ranks(model.module[0].weight.detach()))
print("dropout masks equal on all ranks:", same_on_all_ranks(mask))
dist.destroy_process_group()

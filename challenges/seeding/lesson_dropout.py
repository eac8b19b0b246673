import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def matches_every_rank(t):
    copies = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, t)
    return all(torch.equal(c, t) for c in copies)


dist.init_process_group("gloo")
# No torch.manual_seed anywhere.
model = DDP(nn.Sequential(nn.Linear(8, 32), nn.Dropout(p=0.3)))
out = model(torch.ones(2, 8))
kept = (out != 0).float()

print("same weights:", matches_every_rank(model.module[0].weight.detach()))
print("same dropout mask:", matches_every_rank(kept))
dist.destroy_process_group()

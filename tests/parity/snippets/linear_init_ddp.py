# Unseeded nn.Linear initialisation differs per rank (each process seeds from entropy), but
# DistributedDataParallel broadcasts rank 0's parameters when it wraps the model, so afterwards
# every rank holds the same parameters: rank 0's.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
world = dist.get_world_size()
model = nn.Linear(4, 3)


def flat(module: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in module.parameters()]).clone()


def gather(tensor: torch.Tensor) -> list[torch.Tensor]:
    out = [torch.zeros_like(tensor) for _ in range(world)]
    dist.all_gather(out, tensor)
    return out


before = gather(flat(model))
pairs = [(i, j) for i in range(world) for j in range(i + 1, world)]
print(
    "before DDP, inits differ on every rank:", all(not before[i].equal(before[j]) for i, j in pairs)
)
ddp = DDP(model)
after = gather(flat(ddp.module))
print("after DDP, every rank holds the same parameters:", all(t.equal(after[0]) for t in after))
print("and they are rank 0's initial ones:", after[0].equal(before[0]))
dist.destroy_process_group()

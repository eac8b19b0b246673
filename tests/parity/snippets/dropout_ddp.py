# After DDP has made parameters equal, an identical input still gives each rank a different
# dropout mask: dropout draws from each process's own (entropy-seeded) generator.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
world = dist.get_world_size()
model = DDP(nn.Sequential(nn.Linear(16, 16), nn.Dropout(p=0.5)))
model.train()
out = model(torch.ones(4, 16)).detach()
mask = (out != 0).to(torch.float32)
masks = [torch.zeros_like(mask) for _ in range(world)]
dist.all_gather(masks, mask)
params = torch.cat([p.detach().flatten() for p in model.parameters()])
all_params = [torch.zeros_like(params) for _ in range(world)]
dist.all_gather(all_params, params)
print("parameters equal on every rank:", all(p.equal(all_params[0]) for p in all_params))
distinct = {tuple(m.flatten().tolist()) for m in masks}
print("dropout masks differ on every rank:", len(distinct) == world)
dist.destroy_process_group()

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()

torch.manual_seed(rank)  # the init's draw is seeded; the fill below sets each rank's weight
model = nn.Linear(1, 1, bias=False)
with torch.no_grad():
    model.weight.fill_(rank + 1.0)  # like an unseeded init: each rank starts from its own weight

before = model.weight.item()
ddp_model = DDP(model)  # CPU model, gloo: no device_ids
after = model.weight.item()
print(f"rank {rank}: before {before} after {after}", flush=True)

dist.destroy_process_group()

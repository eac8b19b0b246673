import torch
import torch.nn as nn
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
mesh = init_device_mesh("cpu", (2,))
torch.manual_seed(0)

IN = 8
HIDDEN = 6
model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 4))  # 82 parameters here
total = sum(p.numel() for p in model.parameters())
fully_shard(model[0], mesh=mesh)   # one FSDP unit per layer...
fully_shard(model[2], mesh=mesh)
fully_shard(model, mesh=mesh)      # ...then the root

w = model[0].weight
held = sum(p.to_local().numel() for p in model.parameters())
print(f"rank {rank}: weight {tuple(w.shape)} stored as {tuple(w.to_local().shape)}; "
      f"holds {held} of {total}", flush=True)

dist.destroy_process_group()

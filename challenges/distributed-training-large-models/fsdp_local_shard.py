import torch
import torch.nn as nn
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
mesh = init_device_mesh("cpu", (2,))
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 4))  # 82 parameters in all
fully_shard(model[0], mesh=mesh)   # one FSDP unit per layer...
fully_shard(model[2], mesh=mesh)
fully_shard(model, mesh=mesh)      # ...then the root

w = model[0].weight
held = sum(p.to_local().numel() for p in model.parameters())
print(f"rank {rank}: weight {tuple(w.shape)} stored as {tuple(w.to_local().shape)}; "
      f"holds {held} of 82", flush=True)

dist.destroy_process_group()

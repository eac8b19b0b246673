import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")  # launched with 2 ranks
mesh = init_device_mesh("cpu", (dist.get_world_size(),))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 4))  # the same 82 parameters
fully_shard(model[0], mesh=mesh)
fully_shard(model[2], mesh=mesh)
fully_shard(model, mesh=mesh)
optimizer = torch.optim.Adam(model.parameters())  # built on the shards

model(torch.randn(5, 8)).sum().backward()
optimizer.step()


def nbytes(tensors):  # what this rank stores: the local shard of each DTensor
    return sum(t.to_local().numel() * t.element_size() for t in tensors)


params = list(model.parameters())
state = [s[k] for s in optimizer.state.values() for k in ("exp_avg", "exp_avg_sq")]
n = sum(p.to_local().numel() for p in params)
print(f"{n} parameters; bytes: weights {nbytes(params)}, "
      f"grads {nbytes(p.grad for p in params)}, Adam {nbytes(state)}", flush=True)
dist.destroy_process_group()

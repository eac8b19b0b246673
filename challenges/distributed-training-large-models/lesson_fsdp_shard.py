import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


class Layer(nn.Linear):
    def forward(self, x):
        w = self.weight  # what the layer computes with, during the forward pass
        print(f"rank {dist.get_rank()}: in forward, {type(w).__name__} {tuple(w.shape)}", flush=True)
        return super().forward(x)


dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
mesh = init_device_mesh("cpu", (dist.get_world_size(),))
torch.manual_seed(0)
model = nn.Sequential(Layer(8, 6), nn.ReLU(), nn.Linear(6, 4))
fully_shard(model[0], mesh=mesh)  # one FSDP unit for the first layer...
fully_shard(model, mesh=mesh)  # ...and the root holds the rest

w = model[0].weight
print(f"rank {rank}: stored {type(w).__name__} {tuple(w.shape)}, local {tuple(w.to_local().shape)}", flush=True)
model(torch.randn(2, 8))
w = model[0].weight
print(f"rank {rank}: after forward, {type(w).__name__}, local {tuple(w.to_local().shape)}", flush=True)
dist.destroy_process_group()

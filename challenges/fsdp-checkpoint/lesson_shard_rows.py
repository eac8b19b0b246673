import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")  # launched with 2 ranks
torch.manual_seed(0)  # the layer draws its initial weights before they are overwritten
model = nn.Linear(3, 4, bias=False)
with torch.no_grad():  # easy-to-read weights: rows [0, 1, 2], [3, 4, 5], ...
    model.weight.copy_(torch.arange(12.0).view(4, 3))
fully_shard(model)

weight = model.state_dict()["weight"]
rows = weight.to_local().int().tolist()
print(f"rank {dist.get_rank()}: {type(weight).__name__} {tuple(weight.shape)}, holds {rows}", flush=True)
dist.destroy_process_group()

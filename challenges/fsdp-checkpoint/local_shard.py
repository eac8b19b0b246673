import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
OUT = 6  # the weight's rows: nn.Linear(8, OUT).weight has shape (OUT, 8)
model = nn.Linear(8, OUT)
fully_shard(model)  # FSDP2: each rank keeps a shard of every parameter
weight = model.state_dict()["weight"]
kind, whole, local = type(weight).__name__, tuple(weight.shape), tuple(weight.to_local().shape)
print(f"{kind}, global {whole}, local {local}")
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")  # launched with 2 ranks
torch.manual_seed(0)  # the layer draws its initial weights before they are overwritten
model = nn.Linear(3, 4, bias=False)
with torch.no_grad():
    model.weight.copy_(torch.arange(12.0).view(4, 3))
fully_shard(model)

options = StateDictOptions(full_state_dict=True, cpu_offload=True)
state = get_model_state_dict(model, options=options)  # gathers the shards: every rank calls it
summary = {name: (type(t).__name__, t.int().tolist()) for name, t in state.items()}
print(f"rank {dist.get_rank()}: {summary}", flush=True)
dist.destroy_process_group()

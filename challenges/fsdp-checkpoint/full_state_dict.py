import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
OUT = 6
model = nn.Linear(8, OUT)
fully_shard(model)
options = StateDictOptions(full_state_dict=True, cpu_offload=True)
state = get_model_state_dict(model, options=options)  # a collective: every rank calls it
shapes = {name: (type(t).__name__, tuple(t.shape)) for name, t in state.items()}
print(shapes)
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Linear(8, 6)
fully_shard(model)
path = "/tmp/model.pt"
options = StateDictOptions(full_state_dict=True, cpu_offload=True)
state = get_model_state_dict(model, options=options)  # every rank calls it; rank 0 gets it all
if dist.get_rank() == 0:
    torch.save(state, path)
dist.barrier()
if dist.get_rank() == 0:
    plain = nn.Linear(8, 6)
    plain.load_state_dict(torch.load(path, weights_only=False))
    print("loaded into a plain model")
dist.destroy_process_group()

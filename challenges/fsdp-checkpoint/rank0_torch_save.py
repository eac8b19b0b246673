import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Linear(8, 6)
fully_shard(model)
path = "/tmp/model.pt"
if dist.get_rank() == 0:
    torch.save(model.state_dict(), path)  # the usual DDP habit: save on rank 0
dist.barrier()
if dist.get_rank() == 0:
    plain = nn.Linear(8, 6)
    plain.load_state_dict(torch.load(path, weights_only=False))
    print("loaded into a plain model")
dist.destroy_process_group()

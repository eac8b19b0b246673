import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)

ddp_model = DDP(nn.Linear(2, 2))  # CPU model, gloo: no device_ids
print(list(ddp_model.state_dict()), flush=True)
print(list(ddp_model.module.state_dict()), flush=True)

dist.destroy_process_group()

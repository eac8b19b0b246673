import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)

BIAS = True
IN_SEQUENTIAL = False  # True: the Linear sits inside an nn.Sequential
layer = nn.Linear(2, 2, bias=BIAS)
ddp_model = DDP(nn.Sequential(layer) if IN_SEQUENTIAL else layer)  # CPU, gloo: no device_ids
print(list(ddp_model.state_dict()), flush=True)
print(list(ddp_model.module.state_dict()), flush=True)

dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
BIAS = True
IN_SEQUENTIAL = False  # True: the Linear sits inside an nn.Sequential
layer = nn.Linear(2, 1, bias=BIAS)
model = torch.compile(DDP(nn.Sequential(layer) if IN_SEQUENTIAL else layer))  # lazy: nothing runs
print(list(model.state_dict()))
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.compile(DDP(nn.Linear(2, 1)))  # compiling is lazy: nothing runs yet
print(list(model.state_dict()))
dist.destroy_process_group()

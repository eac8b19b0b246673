import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.compile(DDP(nn.Linear(2, 1)))
checkpoint = model._orig_mod.module.state_dict()  # the plain module inside both wrappers

if dist.get_rank() == 0:  # later, for inference: a plain model, no DDP, no compile
    plain = nn.Linear(2, 1)
    plain.load_state_dict(checkpoint)
    print("loaded")
dist.destroy_process_group()

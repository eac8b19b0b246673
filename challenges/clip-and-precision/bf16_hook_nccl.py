import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
torch.manual_seed(0)
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
model = DDP(nn.Linear(1, 1, bias=False).cuda(), device_ids=[local])
with torch.no_grad():
    model.module.weight.fill_(0.0)
model.register_comm_hook(dist.group.WORLD, default_hooks.bf16_compress_hook)
model(torch.tensor([[1.0 / 3.0]], device="cuda")).sum().backward()  # gradient 1/3
grad = model.module.weight.grad
print(f"grad {grad.item():.8f} {grad.dtype}")
dist.destroy_process_group()

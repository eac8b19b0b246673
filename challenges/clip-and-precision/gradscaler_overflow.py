import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
torch.manual_seed(0)
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
model = DDP(nn.Linear(1, 1, bias=False).cuda(), device_ids=[local])
with torch.no_grad():
    model.module.weight.fill_(1.0)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
x = torch.tensor([[1.0]], device="cuda")
for _step in range(2):  # the same small batch twice
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)  # skipped when a gradient is inf or NaN
    scaler.update()
    opt.zero_grad()
    print(f"scale {scaler.get_scale():.0f}, weight {model.module.weight.item():.2f}")
dist.destroy_process_group()

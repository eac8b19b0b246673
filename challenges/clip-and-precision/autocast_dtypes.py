import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(4, 2))
DTYPE = "bfloat16"
LOSS = "mse_loss"  # or "sum": out.sum()
with torch.autocast("cpu", dtype=getattr(torch, DTYPE)):
    out = model(torch.randn(3, 4))
    loss = nn.functional.mse_loss(out, torch.zeros(3, 2)) if LOSS == "mse_loss" else out.sum()
loss.backward()
w = model.module.weight
print(f"output {out.dtype}, loss {loss.dtype}, weight {w.dtype}, grad {w.grad.dtype}")
dist.destroy_process_group()

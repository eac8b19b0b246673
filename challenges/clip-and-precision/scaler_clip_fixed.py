import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(1, 1, bias=False))
with torch.no_grad():
    model.module.weight.fill_(0.0)
opt = torch.optim.SGD(model.parameters(), lr=1.0)
scaler = torch.amp.GradScaler("cpu")
loss = model(torch.tensor([[4.0]])).sum()  # the gradient is 4.0 on every rank
scaler.scale(loss).backward()
scaler.unscale_(opt)  # back to the true gradient first
torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # meant: clip the gradient to 1
scaler.step(opt)
scaler.update()
print(f"weight moved by {-model.module.weight.item():.6f}")
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
rank = dist.get_rank()
model = DDP(nn.Linear(1, 1, bias=False))
with torch.no_grad():
    model.module.weight.fill_(0.0)
x = torch.tensor([[3.0]]) if rank == 0 else torch.tensor([[5.0]])
model(x).sum().backward()  # local gradient: 3 on rank 0, 5 on rank 1
norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
print(f"norm {norm.item():.1f}, grad after clipping {model.module.weight.grad.item():.4f}")
dist.destroy_process_group()

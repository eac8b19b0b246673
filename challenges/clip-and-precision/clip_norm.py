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
X0 = 3.0  # rank 0's input, so its local gradient
X1 = 5.0  # rank 1's input, so its local gradient
MAX_NORM = 1.0
x = torch.tensor([[X0]]) if rank == 0 else torch.tensor([[X1]])
model(x).sum().backward()
norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=MAX_NORM)
print(f"norm {norm.item():.1f}, grad after clipping {model.module.weight.grad.item():.4f}")
dist.destroy_process_group()

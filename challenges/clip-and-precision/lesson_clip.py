import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # nn.Linear draws its initial weight, overwritten below
model = DDP(nn.Linear(1, 1, bias=False))
with torch.no_grad():
    model.module.weight.fill_(0.0)
x = torch.tensor([[1.0 + 4.0 * rank]])  # the loss is w * x: gradient 1 on rank 0, 5 on rank 1
model(x).sum().backward()
norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
grad = model.module.weight.grad.item()
print(f"rank {rank}: norm {norm.item():.1f}, grad after clipping {grad:.4f}")
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
rank = dist.get_rank()
model = DDP(nn.Linear(1, 1, bias=False))
with torch.no_grad():
    model.module.weight.fill_(0.0)
model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
x = torch.tensor([[1.0 / 3.0]]) if rank == 0 else torch.tensor([[1.0]])
model(x).sum().backward()
print(f"grad {model.module.weight.grad.item():.8f} {model.module.weight.grad.dtype}")
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.main_head = nn.Linear(4, 1)
        self.aux_head = nn.Linear(4, 1)  # defined, but not used in forward

    def forward(self, x):
        return self.main_head(self.body(x))


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(TwoHeads())
torch.manual_seed(rank)  # each rank its own data
model(torch.randn(8, 4)).sum().backward()  # the first backward returns without error

grad = model.module.main_head.weight.grad.clone()
grads = [torch.zeros_like(grad) for _ in range(dist.get_world_size())]
dist.all_gather(grads, grad)
print("main_head grads equal across ranks:", torch.equal(grads[0], grads[1]), flush=True)
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.aux_head = nn.Linear(4, 1)  # never used in forward, but frozen
        self.aux_head.requires_grad_(False)

    def forward(self, x):
        return self.body(x)


dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(TwoHeads())  # no find_unused_parameters
for step in range(2):
    model(torch.randn(8, 4)).sum().backward()
print(f"rank {rank}: 2 steps done", flush=True)
dist.destroy_process_group()

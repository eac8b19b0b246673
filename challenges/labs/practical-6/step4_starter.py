# dp_vs_ddp.py
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Probe(nn.Module):
    """A linear layer that reports how many samples each forward call sees."""

    def __init__(self, tag):
        super().__init__()
        self.tag, self.fc = tag, nn.Linear(4, 1)

    def forward(self, x):
        print(f"Rank {dist.get_rank()}: {self.tag} forward saw {x.shape[0]} samples")
        return self.fc(x)


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ["LOCAL_RANK"])
torch.manual_seed(0)
x = torch.randn(8, 4)  # the global batch

# Your turn (1): print the GPU this rank would drive, e.g. "Rank 0 → cuda:0"
# Your turn (2): on rank 0 only, wrap Probe("DataParallel") in nn.DataParallel, print its
#         device_ids and call it on the whole batch x

per_rank = x.shape[0] // world
ddp = DDP(Probe("DDP"))
ddp(x[rank * per_rank : (rank + 1) * per_rank])
print(f"Rank {rank}: CUDA initialised: {torch.cuda.is_initialized()}")
dist.destroy_process_group()

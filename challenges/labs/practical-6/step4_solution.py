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

print(f"Rank {rank} → cuda:{local_rank}")  # on GPUs: torch.device(f"cuda:{local_rank}")
if rank == 0:  # DataParallel is one process; rank 0 plays that process here
    dp = nn.DataParallel(Probe("DataParallel"))
    print(f"Rank 0: DataParallel device_ids={dp.device_ids}")
    dp(x)

per_rank = x.shape[0] // world
ddp = DDP(Probe("DDP"))
ddp(x[rank * per_rank : (rank + 1) * per_rank])
print(f"Rank {rank}: CUDA initialised: {torch.cuda.is_initialized()}")
dist.destroy_process_group()

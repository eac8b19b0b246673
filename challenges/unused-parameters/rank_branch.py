import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class MaybeAux(nn.Module):
    def __init__(self):
        super().__init__()
        self.main_head = nn.Linear(4, 1)
        self.aux_head = nn.Linear(4, 1)

    def forward(self, x, use_aux):
        out = self.main_head(x)
        return out + self.aux_head(x) if use_aux else out


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
ROWS = 8
model = DDP(MaybeAux(), find_unused_parameters=True)
model(torch.ones(ROWS, 4), use_aux=(rank == 0)).sum().backward()  # aux only on rank 0
print(f"rank {rank}: aux_head.bias.grad = {model.module.aux_head.bias.grad}")
print(f"rank {rank}: main_head.bias.grad = {model.module.main_head.bias.grad}")
dist.destroy_process_group()

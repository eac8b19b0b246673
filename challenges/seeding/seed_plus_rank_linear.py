import torch
import torch.distributed as dist
from torch import nn

SEED = 0
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(SEED + rank)  # a different seed on every rank
layer = nn.Linear(2, 1)
print(f"rank {rank}: {layer.weight.data}")
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()

import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
rank = dist.get_rank()
layer = nn.Linear(2, 1)  # no torch.manual_seed anywhere
print(f"rank {rank}: {layer.weight.data}")
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()

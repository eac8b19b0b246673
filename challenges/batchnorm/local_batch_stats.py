import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()

model = DDP(nn.BatchNorm1d(1))  # training mode; gamma = 1, beta = 0 at the start
x = torch.tensor([[float(rank)], [rank + 2.0]])  # rank 0: [0, 2]; rank 1: [1, 3]
out = model(x)
print([round(v, 4) for v in out.flatten().tolist()])  # same format on every rank

dist.destroy_process_group()

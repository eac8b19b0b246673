import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
rank = dist.get_rank()
drop = nn.Dropout(p=0.5)  # no torch.manual_seed anywhere
mask = (drop(torch.ones(64)) != 0).int()
print(f"rank {rank}: {''.join(map(str, mask.tolist()))}")
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()

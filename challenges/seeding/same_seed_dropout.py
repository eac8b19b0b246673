import torch
import torch.nn as nn
import torch.distributed as dist

SEED = 0

dist.init_process_group("gloo")
torch.manual_seed(SEED)  # the same seed on every rank

drop = nn.Dropout(p=0.5)
mask = (drop(torch.ones(8)) != 0).int().tolist()
print(mask)
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()

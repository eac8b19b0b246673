import torch
import torch.nn as nn
import torch.distributed as dist

SEED = 0

dist.init_process_group("gloo")
torch.manual_seed(SEED)  # same seed on every rank

layer = nn.Linear(2, 1)
print(layer.weight.data)
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()

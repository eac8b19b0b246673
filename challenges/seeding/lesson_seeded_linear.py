import torch
import torch.nn as nn
import torch.distributed as dist

dist.init_process_group("gloo")
torch.manual_seed(7)  # same seed on every rank

layer = nn.Linear(3, 1)
print(layer.weight.data)
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()

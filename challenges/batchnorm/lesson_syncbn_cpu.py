import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
model = nn.SyncBatchNorm.convert_sync_batchnorm(model)  # before wrapping in DDP
print(f"rank {rank}: layer 1 is now {type(model[1]).__name__}")
try:
    model = DDP(model)  # a CPU module, on gloo
    print(f"rank {rank}: wrapped")
except ValueError as error:
    # Caught so that each rank reports it: left uncaught, the first rank to exit has torchrun
    # stop the other, often before that one prints. The first sentence is the stable part.
    print(f"rank {rank}: ValueError: {str(error).split('.')[0]}")
dist.destroy_process_group()

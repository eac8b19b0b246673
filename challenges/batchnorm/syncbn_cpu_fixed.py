import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
if torch.cuda.is_available():  # SyncBatchNorm synchronises GPU (or XPU) inputs only
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
model = DDP(model)  # on CPU: plain BatchNorm, statistics of each rank's own batch

loss = model(torch.randn(16, 4)).sum()
loss.backward()
print(f"rank {dist.get_rank()}: step done", flush=True)

dist.destroy_process_group()

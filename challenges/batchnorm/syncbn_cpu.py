import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
model = nn.SyncBatchNorm.convert_sync_batchnorm(model)  # statistics over every rank's batch
model = DDP(model)  # CPU module, gloo, no device_ids

loss = model(torch.randn(16, 4)).sum()
loss.backward()
print(f"rank {dist.get_rank()}: step done", flush=True)

dist.destroy_process_group()

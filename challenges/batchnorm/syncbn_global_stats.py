import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
rank = dist.get_rank()
device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
torch.cuda.set_device(device)

bn = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(1)).to(device)  # momentum 0.1
model = DDP(bn, device_ids=[device.index])
batch = torch.full((4, 1), 10.0 * (rank + 1), device=device)  # rank 0: 10s; rank 1: 20s

model(batch).sum().backward()
print(f"running_mean={bn.running_mean.item():.4f}")

dist.destroy_process_group()

import os

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
local_rank = int(os.environ["LOCAL_RANK"])

model = nn.Linear(2, 2)  # stays on the CPU: this machine has no GPU
ddp_model = DDP(model, device_ids=[local_rank])  # copied from a GPU training script
print(f"rank {dist.get_rank()}: wrapped", flush=True)

dist.destroy_process_group()

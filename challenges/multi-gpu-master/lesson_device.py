import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

# torchrun sets these for every process it starts.
rank = int(os.environ["RANK"])  # this process among all processes of the job
local_rank = int(os.environ["LOCAL_RANK"])  # this process among those on its machine
world_size = int(os.environ["WORLD_SIZE"])  # all processes of the job

# One process per GPU: the GPU numbered LOCAL_RANK on this machine, or the CPU without one.
if torch.cuda.is_available():
    device = torch.device(f"cuda:{local_rank}")
    torch.cuda.set_device(device)
    backend = "nccl"
else:
    device = torch.device("cpu")
    backend = "gloo"
dist.init_process_group(backend)
torch.manual_seed(0)

model = nn.Linear(4, 2).to(device)  # move the model first, then wrap it
device_ids = [local_rank] if device.type == "cuda" else None  # a CPU module takes none
ddp_model = DDP(model, device_ids=device_ids)
print(f"rank {rank} of {world_size}, local rank {local_rank}: {backend}, {device}, device_ids={device_ids}", flush=True)
dist.destroy_process_group()

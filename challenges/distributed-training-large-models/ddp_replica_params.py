import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
torch.manual_seed(0)

IN = 8
HIDDEN = 6
model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 4))  # 82 parameters here
ddp_model = DDP(model)

held = sum(p.numel() for p in ddp_model.parameters())
print(f"rank {rank} holds {held} parameters", flush=True)

dist.destroy_process_group()

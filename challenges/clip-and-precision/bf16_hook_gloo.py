import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(4, 2))
model.register_comm_hook(dist.group.WORLD, default_hooks.bf16_compress_hook)
print("hook registered", flush=True)
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(4, 2))
seen = []


def spy(state, bucket):  # DDP's own all-reduce, after noting what it sends
    seen.append(bucket.buffer().dtype)
    return default_hooks.allreduce_hook(None, bucket)


model.register_comm_hook(None, spy)
with torch.autocast("cpu", dtype=torch.bfloat16):
    loss = model(torch.randn(3, 4)).float().pow(2).mean()
loss.backward()
print(f"all-reduced dtypes: {seen}")
dist.destroy_process_group()

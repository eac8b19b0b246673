import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")  # launched with 2 ranks
torch.manual_seed(0)
net = nn.Linear(4, 2)
model = torch.compile(DDP(net))  # returns at once: nothing is compiled before the first call

chain = [model, model._orig_mod, model._orig_mod.module]
print(" -> ".join(type(m).__name__ for m in chain), flush=True)
print(f"innermost is net: {model._orig_mod.module is net}", flush=True)
print(f"optimize_ddp: {torch._dynamo.config.optimize_ddp}, bucket cap: {model._orig_mod.bucket_bytes_cap} bytes", flush=True)
dist.destroy_process_group()

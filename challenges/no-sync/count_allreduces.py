import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(4, 1))
all_reduces = 0


def counting_hook(state, bucket):  # DDP's own all-reduce, counted
    global all_reduces
    all_reduces += 1
    return default_hooks.allreduce_hook(None, bucket)


model.register_comm_hook(None, counting_hook)
MICRO_BATCHES = 8
ACCUM = 4
for i in range(MICRO_BATCHES):  # an optimizer step every ACCUM micro-batches
    last = (i + 1) % ACCUM == 0
    with contextlib.nullcontext() if last else model.no_sync():
        (model(torch.randn(2, 4)).sum() / ACCUM).backward()
print(f"all-reduces: {all_reduces}")
dist.destroy_process_group()

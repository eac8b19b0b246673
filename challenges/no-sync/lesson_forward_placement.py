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
accum = 4
for forward_inside in (True, False):
    all_reduces = 0
    for i in range(accum):
        x = torch.randn(2, 4)
        if i == accum - 1:  # the last micro-batch syncs, as it should
            model(x).sum().backward()
        elif forward_inside:
            with model.no_sync():
                model(x).sum().backward()
        else:
            loss = model(x).sum()  # forward outside the context
            with model.no_sync():
                loss.backward()  # only the backward inside
    where = "inside" if forward_inside else "outside"
    print(f"forward {where}: all-reduces = {all_reduces}")
    model.zero_grad()
dist.destroy_process_group()

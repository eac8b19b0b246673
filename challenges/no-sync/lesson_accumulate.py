import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # nn.Linear draws its initial weight, overwritten below
layer = nn.Linear(1, 1, bias=False)
with torch.no_grad():
    layer.weight.fill_(1.0)
model = DDP(layer)
all_reduces = 0


def counting_hook(state, bucket):  # DDP's own all-reduce, counted
    global all_reduces
    all_reduces += 1
    return default_hooks.allreduce_hook(None, bucket)


model.register_comm_hook(None, counting_hook)
x = torch.tensor([[1.0 + rank]])  # rank 0 reads x = 1, rank 1 reads x = 2
for i in range(3):  # the loss is w * x, so each backward adds x to the gradient
    if i < 2:
        with model.no_sync():  # forward and backward inside: nothing is sent
            model(x).sum().backward()
    else:  # the last micro-batch runs outside: this backward syncs
        model(x).sum().backward()
    print(f"micro-batch {i}: grad {layer.weight.grad.item()}, all-reduces {all_reduces}")
dist.destroy_process_group()

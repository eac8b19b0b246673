import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Linear(2, 1, bias=False)
with torch.no_grad():
    model.weight.copy_(torch.tensor([[1.0, -1.0]]))
model = DDP(model)

syncs = 0

def counting_allreduce(state, bucket):  # DDP's own all-reduce, counted
    global syncs
    syncs += 1
    return default_hooks.allreduce_hook(None, bucket)

model.register_comm_hook(None, counting_allreduce)

def backward_on(k):  # accumulate the gradient of this rank's micro-batch k
    x, y = torch.tensor([[1.0 + rank + k, 2.0]]), torch.tensor([[1.0]])
    nn.functional.mse_loss(model(x), y).backward()

def report(k):
    grad = model.module.weight.grad.tolist()[0]
    print(f"rank {rank} after micro-batch {k}: grad {grad}, all-reduces so far {syncs}")

with model.no_sync():  # accumulate locally, no all-reduce
    backward_on(0)
report(0)
backward_on(1)  # the last micro-batch syncs the accumulated gradients
report(1)
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
layer = nn.Linear(1, 1, bias=False)
model = DDP(layer)

X = 4.0
batches = 3 if rank == 0 else 2  # rank 0 got one more batch
with Join([model]):
    for step in range(batches):
        layer.weight.grad = None
        model(torch.tensor([[X]])).sum().backward()  # local gradient: X on every rank
        print(f"rank {rank} step {step}: grad {layer.weight.grad.item()}", flush=True)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

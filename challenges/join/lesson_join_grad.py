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

batches = 3 if rank == 1 else 2  # rank 1's shard holds one batch more
with Join([model]):
    for step in range(batches):
        layer.weight.grad = None
        model(torch.tensor([[6.0]])).sum().backward()  # local gradient: 6 on every rank
        print(f"rank {rank} step {step}: grad {layer.weight.grad.item()}", flush=True)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

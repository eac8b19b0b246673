import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
torch.manual_seed(0)
outside = nn.Linear(2, 2, bias=False)  # called before the wrapped model, never wrapped itself
inner = nn.Linear(2, 1, bias=False)
model = DDP(inner)
x = torch.full((1, 2), float(rank + 1))  # each rank its own data
model(outside(x)).sum().backward()


def same_on_every_rank(grad):
    copies = [torch.zeros_like(grad) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, grad)
    return all(torch.equal(copies[0], copy) for copy in copies)


print(f"wrapped layer's gradient equal across ranks: {same_on_every_rank(inner.weight.grad)}")
print(f"outside layer's gradient equal across ranks: {same_on_every_rank(outside.weight.grad)}")
dist.destroy_process_group()

# Uneven inputs: rank r has 2 + 2r batches. Without Join the rank that runs out first would
# leave its peers waiting in the gradient all-reduce; with Join it shadows their collectives,
# every rank finishes, and the parameters stay equal.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(nn.Linear(1, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [torch.tensor([[float(i + rank)]]) for i in range(2 + 2 * rank)]
with Join([model]):
    for batch in batches:
        optimizer.zero_grad()
        model(batch).sum().backward()
        optimizer.step()
print(f"rank {rank} processed {len(batches)} batches")
params = torch.cat([p.detach().flatten() for p in model.parameters()])
everyone = [torch.zeros_like(params) for _ in range(world)]
dist.all_gather(everyone, params)
print("parameters equal on every rank:", all(p.equal(everyone[0]) for p in everyone))
print("parameters:", [round(x, 5) for x in params.tolist()])
dist.destroy_process_group()

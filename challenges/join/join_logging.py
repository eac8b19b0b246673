import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

batches = 3 if rank == 0 else 2  # rank 0 got one more batch
with Join([model]):
    for step in range(batches):
        opt.zero_grad()
        loss = model(torch.ones(4, 2)).sum()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)  # log the loss summed over ranks
        print(f"rank {rank} step {step}: total loss {total.item():.2f}", flush=True)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(rank)  # each rank reads different data
accum = 2
for step in range(3):
    for i in range(accum):
        with model.no_sync():  # accumulate without paying for an all-reduce
            (model(torch.randn(8, 4)).sum() / accum).backward()
    opt.step()
    opt.zero_grad()

weights = [torch.zeros(4) for _ in range(2)]
dist.all_gather(weights, model.module.weight.detach()[0])
print(f"replicas identical: {torch.equal(weights[0], weights[1])}")
dist.destroy_process_group()

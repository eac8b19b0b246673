import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

SHARED = 2  # batches on every rank
batches = SHARED + 1 if rank == 0 else SHARED  # rank 0 got one more batch
with model.join():  # a rank out of batches shadows the others' all-reduces
    for step in range(batches):
        opt.zero_grad()
        model(torch.ones(4, 2)).sum().backward()
        opt.step()
print(f"rank {rank}: trained {batches} steps", flush=True)
dist.barrier()  # wait for every rank before rank 0 saves a checkpoint
if rank == 0:
    print("rank 0: saving checkpoint", flush=True)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()

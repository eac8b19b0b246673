import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)

ddp_model = DDP(nn.Linear(2, 2))
optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)

# Each rank reads its own shard: rank 0 has 10 rows, rank 1 has 8.
shard = torch.randn(10 if rank == 0 else 8, 2)

for step, batch in enumerate(shard.split(4)):  # rank 0: 4, 4, 2 rows; rank 1: 4, 4
    optimizer.zero_grad()
    loss = ddp_model(batch).sum()
    loss.backward()
    optimizer.step()
    print(f"rank {rank}: step {step} done", flush=True)

dist.barrier()  # wait for every rank before saving a checkpoint
print(f"rank {rank}: finished", flush=True)
dist.destroy_process_group()

# practical6_ddp.py
import os

import torch
import torch.distributed as dist

GLOBAL_BATCH, DIM = 8, 4


def get_batch(batch_size, dim):
    """The same global batch on every rank: sample i is row i."""
    g = torch.Generator().manual_seed(0)
    return torch.randn(batch_size, dim, generator=g), torch.randn(batch_size, 1, generator=g)


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ["LOCAL_RANK"])
print(f"Rank: {rank} | Local Rank: {local_rank} | World size: {world}")

x_all, y_all = get_batch(GLOBAL_BATCH, DIM)
per_rank = GLOBAL_BATCH // world
indices = list(range(rank * per_rank, (rank + 1) * per_rank))
x, y = x_all[indices], y_all[indices]
print(f"Rank {rank} takes samples {indices}")

dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()

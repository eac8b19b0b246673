# Rank 1 raises while rank 0 waits for it in all_reduce. torchrun stops the survivors once a
# worker fails; whether rank 0 first sees gloo's "connection closed" error or is stopped by its
# launcher is a race, which the suite normalises ("ends after a peer failed").
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} joined", flush=True)
if rank == 1:
    raise RuntimeError("rank 1 crashed before the collective")
dist.all_reduce(torch.ones(1))
print("never printed: the peer is gone")

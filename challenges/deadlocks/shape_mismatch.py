import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

# Rank 0 contributes 2 numbers, rank 1 contributes 3.
t = torch.ones(2 if rank == 0 else 3)
dist.all_reduce(t)
print(f"rank {rank}: {t}", flush=True)

dist.destroy_process_group()

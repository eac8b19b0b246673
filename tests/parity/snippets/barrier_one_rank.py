# A barrier only rank 0 reaches: rank 1 returns without it. This does not hang on gloo: when
# rank 1's process exits its connections close, and rank 0's barrier raises.
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} initialised", flush=True)
if rank == 0:
    dist.barrier()
    print("rank 0 passed the barrier")
else:
    print("rank 1 returns without the barrier", flush=True)

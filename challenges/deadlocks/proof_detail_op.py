import os
import torch
import torch.distributed as dist

# As debug_detail.py, but the shapes agree and the operations differ.
os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
dist.set_debug_level_from_env()

dist.init_process_group("gloo")
rank = dist.get_rank()

t = torch.ones(2)
if rank == 0:
    dist.all_reduce(t)
else:
    dist.broadcast(t, src=0)
print(f"rank {rank}: {t}", flush=True)
dist.destroy_process_group()

import os
import torch
import torch.distributed as dist

# Same as launching with `TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun ...`; torch reads the
# variable when it is imported, so a script that sets it later must ask torch to re-read it.
os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
dist.set_debug_level_from_env()

dist.init_process_group("gloo")
rank = dist.get_rank()

t = torch.ones(2 if rank == 0 else 3)
dist.all_reduce(t)
print(f"rank {rank}: {t}", flush=True)
dist.destroy_process_group()

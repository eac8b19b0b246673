import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

if rank == 0:
    print("rank 0: saving checkpoint", flush=True)
    dist.barrier()  # wait until the checkpoint is safely written everywhere

t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {rank}: {t}", flush=True)
dist.destroy_process_group()

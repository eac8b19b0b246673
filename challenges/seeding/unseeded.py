import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

w = torch.randn(3)  # no torch.manual_seed anywhere
print(f"rank {rank}: {w}")
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()

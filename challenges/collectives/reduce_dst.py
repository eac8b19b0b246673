import torch
import torch.distributed as dist

VALUES = [1.0, 2.0, 3.0]  # rank r holds VALUES[r]

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([VALUES[rank]])
dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
print(f"rank {rank}: {t.item()}")
dist.destroy_process_group()

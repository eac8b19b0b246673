import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank + 1)])  # 1., 2., 3.
dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
print(f"rank {rank}: {t.item()}")
dist.destroy_process_group()

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank + 7)])  # 7., 8., 9.
dist.broadcast(t, src=2)
print(f"rank {rank}: {t.item()}")
dist.destroy_process_group()

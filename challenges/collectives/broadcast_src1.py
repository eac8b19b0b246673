import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank * 10)])  # 0., 10., 20.
dist.broadcast(t, src=1)
print(f"rank {rank}: {t.item()}")
dist.destroy_process_group()

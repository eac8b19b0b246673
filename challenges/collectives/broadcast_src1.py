import torch
import torch.distributed as dist

SRC = 1  # the rank whose tensor every rank receives
SCALE = 10  # rank r holds r * SCALE

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank * SCALE)])
dist.broadcast(t, src=SRC)
print(f"rank {rank}: {t.item()}")
dist.destroy_process_group()

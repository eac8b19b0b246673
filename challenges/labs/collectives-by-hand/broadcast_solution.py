import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

t = torch.tensor([rank * 10])
dist.broadcast(t, src=1)
print(f"rank {rank}: value = {t.item()}")

dist.destroy_process_group()
